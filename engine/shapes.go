package engine

import "github.com/respire-go/respire/netio/resp"

// The reply shapes of the typed commands. The client's typed calls and the simulator's workload
// take them from here, so that both refuse the same replies.
var (
	// ShapeOK is the reply of SET, MSET and the other commands that answer OK.
	ShapeOK = ShapeOf(resp.KindSimpleString).Text("OK")
	// ShapeOKOrNull is OK or a null (SET with NX or XX).
	ShapeOKOrNull = ShapeOf(resp.KindSimpleString, resp.KindNull).Text("OK")
	// ShapeQueued is a command's reply inside MULTI.
	ShapeQueued = ShapeOf(resp.KindSimpleString).Text("QUEUED")
	// ShapePong is PING's reply without a message.
	ShapePong = ShapeOf(resp.KindSimpleString).Text("PONG")
	// ShapeInt is an integer (INCR, DEL, ...).
	ShapeInt = ShapeOf(resp.KindInteger)
	// ShapeOptInt is an integer or a null.
	ShapeOptInt = ShapeOf(resp.KindInteger, resp.KindNull)
	// ShapeBool is an integer 0 or 1 under RESP2, a boolean under RESP3.
	ShapeBool = ShapeOf(resp.KindInteger, resp.KindBoolean)
	// ShapeText is a string that is never null.
	ShapeText = ShapeOf(resp.KindSimpleString, resp.KindBulkString, resp.KindVerbatimString)
	// ShapeBulk is a string or a null (GET, HGET, LPOP, ...).
	ShapeBulk = ShapeOf(resp.KindBulkString, resp.KindSimpleString, resp.KindVerbatimString, resp.KindNull)
	// ShapeFloat is a number: a double under RESP3, a string or an integer under RESP2.
	ShapeFloat = ShapeOf(resp.KindDouble, resp.KindBulkString, resp.KindSimpleString, resp.KindInteger)
	// ShapeOptFloat is a number or a null.
	ShapeOptFloat = ShapeOf(resp.KindDouble, resp.KindBulkString, resp.KindNull, resp.KindInteger)
	// ShapeArray is an array, a set or a null (MGET, SMEMBERS, ...).
	ShapeArray = ShapeOf(resp.KindArray, resp.KindSet, resp.KindNull)
	// ShapeMap is a map under RESP3, a flat array under RESP2 (HGETALL, ...).
	ShapeMap = ShapeOf(resp.KindMap, resp.KindArray)
	// ShapeOptArray is an array, a map or a null.
	ShapeOptArray = ShapeOf(resp.KindArray, resp.KindMap, resp.KindNull)
)
