package resp_test

import (
	"fmt"
	"strings"

	"github.com/respire-go/respire/netio/resp"
)

func ExampleParse() {
	buf := []byte("*2\r\n$5\r\nhello\r\n:42\r\n+OK")
	var v resp.Value
	n, err := resp.Parse(buf, &v, nil)
	fmt.Println(n, err, v)

	// The rest of the buffer is only a prefix of the next value.
	_, err = resp.Parse(buf[n:], &v, nil)
	fmt.Println(err == resp.ErrIncomplete)
	// Output:
	// 20 <nil> ["hello" int:42]
	// true
}

func ExampleReader() {
	r := resp.NewReader(strings.NewReader("-MOVED 3999 127.0.0.1:6381\r\n%1\r\n+proto\r\n:3\r\n"), nil)
	var v resp.Value
	for r.Read(&v) == nil {
		if v.IsError() {
			fmt.Println("error code:", v.ErrorCode())
			continue
		}
		fmt.Println(v)
	}
	// Output:
	// error code: MOVED
	// map{simple:"proto": int:3}
}

func ExampleAppendValue() {
	reply := resp.MapOf(resp.BulkString("ok"), resp.Bool(true), resp.BulkString("ratio"), resp.Double(0.5))
	fmt.Printf("%q\n", resp.AppendValue(nil, reply, 3))
	fmt.Printf("%q\n", resp.AppendValue(nil, reply, 2))
	// Output:
	// "%2\r\n$2\r\nok\r\n#t\r\n$5\r\nratio\r\n,0.5\r\n"
	// "*4\r\n$2\r\nok\r\n:1\r\n$5\r\nratio\r\n$3\r\n0.5\r\n"
}

func ExampleParseCommand() {
	buf := resp.AppendCommand(nil, "SET", "greeting", "hi")
	buf = append(buf, "PING\r\n"...)
	var args [][]byte
	for len(buf) > 0 {
		n, err := resp.ParseCommand(buf, &args, nil)
		if err != nil {
			break
		}
		fmt.Printf("%q\n", args)
		buf = buf[n:]
	}
	// Output:
	// ["SET" "greeting" "hi"]
	// ["PING"]
}
