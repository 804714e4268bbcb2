package compat

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/twmb/avro"
)

func TestScratch(t *testing.T) {
	s := avro.MustParse(`{"type":"record","name":"R","namespace":"ns","fields":[
	{"name":"a","type":{"type":"record","name":"A","fields":[{"name":"x","type":"int"}]}},
	{"name":"b","type":"A","aliases":["bb"]},
	{"name":"c","type":["null","A", {"type":"enum","name":"E","symbols":["X"],"default":"X"}]},
	{"name":"n","type":["null","R"]}
	]}`)
	b, _ := json.MarshalIndent(s.Root(), "", " ")
	fmt.Println(string(b))
	w := avro.MustParse(`{"type":"record","name":"R","fields":[{"name":"a","type":"int"},{"name":"b","type":"string"}]}`)
	r := avro.MustParse(`{"type":"record","name":"R","fields":[{"name":"a","type":"string"},{"name":"c","type":"string"}]}`)
	fmt.Println(avro.CheckCompatibility(w, r))
}
