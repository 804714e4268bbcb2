package testsupport

import (
	"testing"

	"github.com/twmb/franz-go/pkg/sr"
	"github.com/twmb/franz-go/pkg/sr/srfake"
)

// AvroMetaHTTP are the Avro fields meta and http of an Event Platform
// event, as the JSON → Avro mapping writes them.
const AvroMetaHTTP = `
 {"name":"meta","type":{"type":"record","name":"Meta","fields":[
   {"name":"stream","type":"string"},{"name":"id","type":"string"},{"name":"dt","type":"string"},
   {"name":"domain","type":["null","string"],"default":null}]}},
 {"name":"http","type":["null",{"type":"record","name":"Http","fields":[
   {"name":"client_ip","type":["null","string"],"default":null},
   {"name":"request_headers","type":{"type":"map","values":"string"},"default":{}}]}],"default":null},`

// editFunnelAvroFields are the fields of analytics/edit_funnel 1.0.0 in
// Avro that the encoding keeps (_schema carries $schema).
const editFunnelAvroFields = `{"type":"record","name":"EditFunnel","namespace":"analytics","fields":[
 {"name":"_schema","type":"string"},
 {"name":"dt","type":["null","string"],"default":null},` + AvroMetaHTTP + `
 {"name":"action","type":"string"},
 {"name":"editor","type":"string"},
 {"name":"session_token","type":"string"},
 {"name":"page_id","type":["null","long"],"default":null}`

// EditFunnelAvro is the Avro schema of analytics/edit_funnel 1.0.0 with
// every property (_schema carries $schema).
const EditFunnelAvro = editFunnelAvroFields + `,
 {"name":"user_edit_count_bucket","type":["null","string"],"default":null}]}`

// EditFunnelAvroNoBucket is EditFunnelAvro without user_edit_count_bucket,
// which an encoding with it drops.
const EditFunnelAvroNoBucket = editFunnelAvroFields + `]}`

// EditFunnelAvroClient is the part of analytics/edit_funnel 1.0.0 a client
// writes in Avro: meta (stream, id, dt), action, editor, session_token and
// page_id.
const EditFunnelAvroClient = `{"type":"record","name":"EditFunnel","namespace":"analytics","fields":[
 {"name":"meta","type":{"type":"record","name":"Meta","fields":[
   {"name":"stream","type":"string"},{"name":"id","type":"string"},{"name":"dt","type":"string"}]}},
 {"name":"action","type":"string"},
 {"name":"editor","type":"string"},
 {"name":"session_token","type":"string"},
 {"name":"page_id","type":["null","long"],"default":null}]}`

// FakeRegistry starts an in-process schema registry (franz-go's srfake),
// closed when the test ends, and returns its URL and a client of it.
func FakeRegistry(t testing.TB) (string, *sr.Client) {
	t.Helper()
	reg := srfake.New()
	t.Cleanup(reg.Close)
	cl, err := sr.NewClient(sr.URLs(reg.URL()))
	if err != nil {
		t.Fatal(err)
	}
	return reg.URL(), cl
}

// RegisterAvro registers an Avro schema under subject and returns its id.
func RegisterAvro(t testing.TB, cl *sr.Client, subject, schema string) int {
	t.Helper()
	ss, err := cl.CreateSchema(t.Context(), subject, sr.Schema{Schema: schema, Type: sr.TypeAvro})
	if err != nil {
		t.Fatal(err)
	}
	return ss.ID
}
