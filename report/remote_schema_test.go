package report

import (
	"bytes"
	"testing"

	"github.com/partbench/partbench/remote"
)

// TestRemoteLegacySchemaRead: results.json written under the old spelling
// of the remote schema ("partbench.remote.v1") reads as the current one
// ("partbench.remote/v1"), with its aggregates; an unknown spelling does not.
func TestRemoteLegacySchemaRead(t *testing.T) {
	if RemoteSchema != "partbench.remote/v1" || remote.LegacyResultsSchema != "partbench.remote.v1" {
		t.Fatalf("schemas %q (legacy %q)", RemoteSchema, remote.LegacyResultsSchema)
	}
	cur := remoteResults(t, 0.010)
	old := bytes.Replace(cur, []byte(`"`+RemoteSchema+`"`), []byte(`"`+remote.LegacyResultsSchema+`"`), 1)
	if bytes.Equal(old, cur) {
		t.Fatal("the fixture does not carry the schema string")
	}
	d, err := ReadDoc(bytes.NewReader(old), "old.json")
	if err != nil {
		t.Fatal(err)
	}
	if d.Schema != RemoteSchema || d.Remote == nil || len(d.Remote.Aggregates) == 0 {
		t.Errorf("old spelling read as schema %q, remote %v", d.Schema, d.Remote != nil)
	}
	bad := bytes.Replace(cur, []byte(`"`+RemoteSchema+`"`), []byte(`"partbench.remote.v2"`), 1)
	if _, err := ReadDoc(bytes.NewReader(bad), "bad.json"); err == nil {
		t.Error("an unknown remote schema spelling was accepted")
	}
}
