package interop

import (
	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/internal/echotool"
)

// sampleTools covers the schema features the converters rewrite:
// optional fields, defaults, enums, nested objects, arrays, $defs/$ref,
// nullable types and constraints some dialects lack.
func sampleTools() []tool.Tool {
	return []tool.Tool{
		echotool.New("now", "The current time.", `{"type":"object"}`),
		echotool.New("search_flights", "Searches flights between two airports.", `{"type":"object","properties":{
			"from":{"type":"string","pattern":"^[A-Z]{3}$","description":"IATA code."},
			"to":{"type":"string","pattern":"^[A-Z]{3}$"},
			"date":{"type":"string","format":"date"},
			"passengers":{"type":"integer","minimum":1,"maximum":9,"default":1},
			"cabin":{"type":"string","enum":["economy","business","first"]},
			"max_price":{"type":["number","null"]},
			"airlines":{"type":"array","items":{"type":"string"},"maxItems":5},
			"traveller":{"$ref":"#/$defs/Person"}},
			"required":["from","to","date"],"additionalProperties":false,
			"$defs":{"Person":{"type":"object","properties":{"name":{"type":"string","minLength":1},"age":{"type":"integer"}},"required":["name"]}}}`),
		echotool.New("weather", "Current weather in a city.", `{"type":"object","properties":{"city":{"type":"string"},"units":{"type":"string","enum":["metric","imperial"],"default":"metric"}},"required":["city"]}`),
	}
}

func sampleOutcomes() []tool.Outcome {
	return []tool.Outcome{
		{ID: "call_1", Result: tool.Result{Output: "Paris: 18°C"}},
		{ID: "call_2", Result: tool.Result{}},
		{ID: "call_3", Result: tool.Result{IsError: true, Kind: tool.KindInvalidArguments, Error: `invalid arguments for tool "weather": /city: expected a string, got 7`}},
	}
}
