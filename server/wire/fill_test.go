package wire_test

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
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

// leafPaths names the fields fill sets, in its order: a field of a
// struct in a slice, a map or behind a pointer is named through it.
func leafPaths(t reflect.Type, prefix string) []string {
	if t == timeType || t == rawType {
		return []string{prefix}
	}
	switch t.Kind() {
	case reflect.Pointer, reflect.Slice:
		return leafPaths(t.Elem(), prefix)
	case reflect.Struct:
		var out []string
		for i := range t.NumField() {
			if sf := t.Field(i); sf.IsExported() && sf.Tag.Get("json") != "-" {
				out = append(out, leafPaths(sf.Type, prefix+"."+sf.Name)...)
			}
		}
		return out
	}
	return []string{prefix}
}

// changeLeaf changes the i-th leaf of v, in fill's order, and reports
// whether there was one.
func changeLeaf(v reflect.Value, i *int) bool {
	t := v.Type()
	leaf := func(change func()) bool {
		if *i == 0 {
			change()
			return true
		}
		*i--
		return false
	}
	switch {
	case t == timeType:
		return leaf(func() { v.Set(reflect.ValueOf(v.Interface().(time.Time).Add(time.Hour))) })
	case t == rawType:
		return leaf(func() { v.Set(reflect.ValueOf(json.RawMessage(`{"changed":true}`))) })
	}
	switch t.Kind() {
	case reflect.String:
		return leaf(func() { v.SetString(v.String() + "'") })
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return leaf(func() { v.SetInt(v.Int() + 1000) })
	case reflect.Float32, reflect.Float64:
		return leaf(func() { v.SetFloat(v.Float() + 1000) })
	case reflect.Bool:
		return leaf(func() { v.SetBool(!v.Bool()) })
	case reflect.Interface:
		return leaf(func() { v.Set(reflect.ValueOf("changed")) })
	case reflect.Map:
		return leaf(func() {
			e := reflect.New(t.Elem()).Elem()
			(&filler{n: 1000}).value(e)
			v.SetMapIndex(reflect.ValueOf("changed").Convert(t.Key()), e)
		})
	case reflect.Pointer:
		return changeLeaf(v.Elem(), i)
	case reflect.Slice:
		return changeLeaf(v.Index(0), i)
	case reflect.Struct:
		for j := range t.NumField() {
			if sf := t.Field(j); sf.IsExported() && sf.Tag.Get("json") != "-" && changeLeaf(v.Field(j), i) {
				return true
			}
		}
	}
	return false
}

// unreached names each field of a full From that convert does not carry
// to the wire: changed alone, it leaves convert's JSON as it was.
func unreached[From, To any](convert func(From) To) []string {
	encode := func(v From) string {
		b, err := json.Marshal(convert(v))
		if err != nil {
			panic(err)
		}
		return string(b)
	}
	base := encode(fill[From]())
	from := reflect.TypeFor[From]()
	var out []string
	for n, path := range leafPaths(from, strings.TrimPrefix(from.String(), "[]")) {
		v := fill[From]()
		i := n
		if !changeLeaf(reflect.ValueOf(&v).Elem(), &i) {
			panic(fmt.Sprintf("%s: no leaf %d", path, n))
		}
		if encode(v) == base {
			out = append(out, path)
		}
	}
	return out
}
