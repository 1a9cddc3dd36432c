package wire_test

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

var (
	timeType = reflect.TypeFor[time.Time]()
	rawType  = reflect.TypeFor[json.RawMessage]()
)

// filler gives every field a value of its own: each string, number and
// time differs from all the others, every bool is true, and a slice or a
// map holds one element, so a value that reaches the wire shows where it
// came from.
type filler struct{ n int }

// fill is a T with every field filled.
func fill[T any]() T {
	var v T
	(&filler{}).value(reflect.ValueOf(&v).Elem())
	return v
}

func (f *filler) value(v reflect.Value) {
	t := v.Type()
	switch {
	case t == timeType:
		f.n++
		v.Set(reflect.ValueOf(time.Date(2026, 11, 29, 10, 0, f.n, 0, time.UTC)))
		return
	case t == rawType:
		f.n++
		v.Set(reflect.ValueOf(json.RawMessage(fmt.Sprintf(`{"k":"raw%d"}`, f.n))))
		return
	}
	switch t.Kind() {
	case reflect.String:
		f.n++
		v.SetString(fmt.Sprintf("s%d", f.n))
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		f.n++
		v.SetInt(int64(f.n))
	case reflect.Float32, reflect.Float64:
		f.n++
		v.SetFloat(float64(f.n) + 0.5)
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Interface:
		f.n++
		v.Set(reflect.ValueOf(fmt.Sprintf("any%d", f.n)))
	case reflect.Pointer:
		v.Set(reflect.New(t.Elem()))
		f.value(v.Elem())
	case reflect.Slice:
		v.Set(reflect.MakeSlice(t, 1, 1))
		f.value(v.Index(0))
	case reflect.Map:
		f.n++
		v.Set(reflect.MakeMap(t))
		e := reflect.New(t.Elem()).Elem()
		f.value(e)
		v.SetMapIndex(reflect.ValueOf(fmt.Sprintf("k%d", f.n)).Convert(t.Key()), e)
	case reflect.Struct:
		for i := range t.NumField() {
			if sf := t.Field(i); sf.IsExported() && sf.Tag.Get("json") != "-" {
				f.value(v.Field(i))
			}
		}
	default:
		panic(fmt.Sprintf("fill: no value for a %v", t))
	}
}

// golden compares the JSON of a full and of a zero value with
// testdata/name.json; go test -update rewrites it.
func golden(t *testing.T, name string, full, zero any) {
	t.Helper()
	got, err := json.MarshalIndent(struct {
		Full any `json:"full"`
		Zero any `json:"zero"`
	}{full, zero}, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, '\n')
	p := filepath.Join("testdata", name+".json")
	if *update {
		if err := os.WriteFile(p, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("%v (go test -update writes it)", err)
	}
	if string(got) != string(want) {
		t.Errorf("%s: the wire changed (go test -update rewrites %s once the editors, their tests and SPEC §6 agree); got:\n%s", name, p, got)
	}
}
