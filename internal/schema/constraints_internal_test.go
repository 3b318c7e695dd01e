package schema

import (
	"reflect"
	"testing"
)

// TestConstraintsNone holds none to every field of constraints: each one
// set in turn to a value newConstraints does not give makes none false,
// so a keyword added to constraints later cannot be dropped by the uses
// that share noConstraints.
func TestConstraintsNone(t *testing.T) {
	if c := newConstraints(); !c.none() {
		t.Fatal("newConstraints() is not none")
	}
	typ := reflect.TypeFor[constraints]()
	for i := range typ.NumField() {
		c := newConstraints()
		f := reflect.ValueOf(&c).Elem().Field(i)
		f = reflect.NewAt(f.Type(), f.Addr().UnsafePointer()).Elem() // unexported: set through its address
		switch f.Kind() {
		case reflect.String:
			f.SetString("x")
		case reflect.Bool:
			f.SetBool(true)
		case reflect.Int:
			f.SetInt(f.Int() + 2)
		case reflect.Float64:
			f.SetFloat(1)
		case reflect.Slice:
			f.Set(reflect.MakeSlice(f.Type(), 0, 0))
		case reflect.Pointer:
			f.Set(reflect.New(f.Type().Elem()))
		default:
			t.Fatalf("field %s: kind %s not covered by this test", typ.Field(i).Name, f.Kind())
		}
		if c.none() {
			t.Errorf("constraints with %s set is none", typ.Field(i).Name)
		}
	}
	if !noConstraints.none() {
		t.Error("noConstraints was modified")
	}
}
