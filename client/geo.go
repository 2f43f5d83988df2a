package client

import (
	"github.com/respire-go/respire/netio/resp"
)

// GeoPos is a position: longitude and latitude in degrees.
type GeoPos struct {
	Longitude, Latitude float64
}

// GeoLocation is a member of a geo set with its position (GeoAdd writes Name, Longitude and
// Latitude). In search results, Dist, Hash and the position are set when the query asked for
// them (WithDist, WithHash, WithCoord).
type GeoLocation struct {
	Name                string
	Longitude, Latitude float64
	// Dist is the distance from the search's center, in the search's unit.
	Dist float64
	// Hash is the member's raw geohash.
	Hash int64
}

func (l GeoLocation) writeArgs(e *enc) {
	e.float(l.Longitude)
	e.float(l.Latitude)
	e.str(l.Name)
}

// GeoAddOptions are the conditions of GeoAdd.
type GeoAddOptions struct {
	// NX only adds new members; XX only updates existing ones.
	NX, XX bool
	// CH counts the changed members, not only the added ones.
	CH bool
}

func (o GeoAddOptions) writeArgs(e *enc) {
	if o.NX && o.XX {
		e.fail("GeoAddOptions", "NX and XX exclude each other")
	}
	if o.NX {
		e.str("NX")
	}
	if o.XX {
		e.str("XX")
	}
	if o.CH {
		e.str("CH")
	}
}

// GeoSort orders search results by distance; empty leaves them unsorted.
type GeoSort string

// Result orders.
const (
	GeoAsc  GeoSort = "ASC"
	GeoDesc GeoSort = "DESC"
)

// GeoRadiusOptions are the options of the GeoRadius family.
type GeoRadiusOptions struct {
	// WithCoord, WithDist and WithHash fill the results' position, distance and geohash.
	WithCoord, WithDist, WithHash bool
	// Count returns at most this many members (COUNT); Any stops at the first Count found.
	Count int64
	Any   bool
	// Sort orders by distance.
	Sort GeoSort
}

func (o GeoRadiusOptions) writeArgs(e *enc) {
	writeGeoResultOptions(e, o.WithCoord, o.WithDist, o.WithHash, o.Count, o.Any, o.Sort)
}

func writeGeoResultOptions(e *enc, coord, dist, hash bool, count int64, anyFound bool, sort GeoSort) {
	if coord {
		e.str("WITHCOORD")
	}
	if dist {
		e.str("WITHDIST")
	}
	if hash {
		e.str("WITHHASH")
	}
	if count != 0 {
		e.str("COUNT")
		e.int(count)
		if anyFound {
			e.str("ANY")
		}
	} else if anyFound {
		e.fail("Any", "needs Count")
	}
	if sort != "" {
		e.str(string(sort))
	}
}

// GeoStore says where the GeoRadius store forms put their result: Key, with the members'
// geohashes as scores, or with Dist their distances (STOREDIST).
type GeoStore struct {
	Key  string
	Dist bool
}

func (s GeoStore) writeArgs(e *enc) {
	if s.Key == "" {
		e.fail("GeoStore.Key", "must not be empty")
	}
	if s.Dist {
		e.str("STOREDIST")
	} else {
		e.str("STORE")
	}
	e.str(s.Key)
}

// GeoSearchQuery describes a GeoSearch: a center (a Member, or else a Longitude and
// Latitude), a shape (a Radius, or else a Width by Height box) in Unit, and how to return
// the results.
type GeoSearchQuery struct {
	Member              string
	Longitude, Latitude float64
	Radius              float64
	Width, Height       float64
	// Unit is the unit of the shape and of the distances returned; empty: meters.
	Unit GeoUnit
	// WithCoord, WithDist and WithHash fill the results' position, distance and geohash
	// (GeoSearch only).
	WithCoord, WithDist, WithHash bool
	// Count returns at most this many members; Any stops at the first Count found.
	Count int64
	Any   bool
	// Sort orders by distance.
	Sort GeoSort
}

func (q GeoSearchQuery) writeArgs(e *enc) {
	if q.Member != "" {
		e.str("FROMMEMBER")
		e.str(q.Member)
	} else {
		e.str("FROMLONLAT")
		e.float(q.Longitude)
		e.float(q.Latitude)
	}
	unit := q.Unit
	if unit == "" {
		unit = Meters
	}
	switch {
	case q.Radius > 0 && (q.Width > 0 || q.Height > 0):
		e.fail("GeoSearchQuery", "Radius excludes Width and Height")
	case q.Radius > 0:
		e.str("BYRADIUS")
		e.float(q.Radius)
		e.str(string(unit))
	case q.Width > 0 && q.Height > 0:
		e.str("BYBOX")
		e.float(q.Width)
		e.float(q.Height)
		e.str(string(unit))
	default:
		e.fail("GeoSearchQuery", "set a positive Radius, or a positive Width and Height")
	}
	if e.spec == cmdGeosearchstore && (q.WithCoord || q.WithDist || q.WithHash) {
		e.fail("GeoSearchQuery", "GeoSearchStore returns no WithCoord, WithDist or WithHash")
	}
	writeGeoResultOptions(e, q.WithCoord, q.WithDist, q.WithHash, q.Count, q.Any, q.Sort)
}

// decGeoLocations decodes the results of a geo search: member names, or [name, dist?, hash?,
// [lon, lat]?] arrays whose optional parts are told apart by their types (a string, an
// integer, an array), in Redis's order.
func decGeoLocations(v *resp.Value) ([]GeoLocation, error) {
	if !isList(v) {
		return nil, unexpected("GEOSEARCH", v)
	}
	out := make([]GeoLocation, 0, v.Len())
	for _, e := range v.All() {
		var l GeoLocation
		var err error
		if !isList(&e) {
			if l.Name, _, err = stringReply("GEOSEARCH", &e); err != nil {
				return nil, err
			}
			out = append(out, l)
			continue
		}
		for i, part := range e.All() {
			switch {
			case i == 0:
				l.Name, _, err = stringReply("GEOSEARCH", &part)
			case part.Kind == resp.KindInteger:
				l.Hash = part.Int
			case isList(&part):
				var p Optional[GeoPos]
				if p, err = geoPosOf(&part); err == nil {
					l.Longitude, l.Latitude = p.Value.Longitude, p.Value.Latitude
				}
			default:
				l.Dist, err = floatReply("GEOSEARCH", &part)
			}
			if err != nil {
				return nil, err
			}
		}
		out = append(out, l)
	}
	return out, nil
}

func geoPosOf(v *resp.Value) (Optional[GeoPos], error) {
	if v.Kind == resp.KindNull {
		return Optional[GeoPos]{}, nil
	}
	if !isList(v) || v.Len() != 2 {
		return Optional[GeoPos]{}, unexpected("GEOPOS", v)
	}
	lon, lat := v.Elem(0), v.Elem(1)
	x, err := floatReply("GEOPOS", &lon)
	if err != nil {
		return Optional[GeoPos]{}, err
	}
	y, err := floatReply("GEOPOS", &lat)
	if err != nil {
		return Optional[GeoPos]{}, err
	}
	return Optional[GeoPos]{Value: GeoPos{Longitude: x, Latitude: y}, Valid: true}, nil
}

// decGeoPos decodes GEOPOS's list of positions, null for missing members.
func decGeoPos(v *resp.Value) ([]Optional[GeoPos], error) {
	if !isList(v) {
		return nil, unexpected("GEOPOS", v)
	}
	out := make([]Optional[GeoPos], 0, v.Len())
	for _, e := range v.All() {
		p, err := geoPosOf(&e)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}
