package tool

import (
	"reflect"
	"testing"

	"github.com/miniopenclaw/tool/internal/schema"
)

type xArgs struct {
	From       string   `json:"from" pattern:"^[A-Z]{3}$" description:"IATA code of the departure airport"`
	To         string   `json:"to" pattern:"^[A-Z]{3}$" description:"IATA code of the arrival airport"`
	Date       string   `json:"date" description:"departure date, YYYY-MM-DD"`
	Passengers int      `json:"passengers" default:"1" minimum:"1" maximum:"9"`
	Cabin      string   `json:"cabin,omitempty" enum:"economy,business,first"`
	Flexible   bool     `json:"flexible,omitempty"`
	MaxPrice   float64  `json:"max_price,omitempty"`
	Airlines   []string `json:"airlines,omitempty"`
}
type xRes struct {
	Flight     string  `json:"flight"`
	From       string  `json:"from"`
	To         string  `json:"to"`
	Date       string  `json:"date"`
	Seats      int     `json:"seats"`
	Cabin      string  `json:"cabin"`
	Price      float64 `json:"price"`
	Refundable bool    `json:"refundable"`
}

func BenchmarkXForIn(b *testing.B) {
	t := reflect.TypeFor[xArgs]()
	for b.Loop() {
		schema.For(t, false)
	}
}
func BenchmarkXForOut(b *testing.B) {
	t := reflect.TypeFor[xRes]()
	for b.Loop() {
		schema.For(t, true)
	}
}
func BenchmarkXEnc(b *testing.B) {
	t := reflect.TypeFor[xArgs]()
	for b.Loop() {
		newArgsEncoder(t)
	}
}
