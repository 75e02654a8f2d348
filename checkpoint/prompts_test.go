package checkpoint

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestReadPromptIDs(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	got, err := ReadPromptIDs(write("ok.json", "[[1, 2, 3], [4, 5, 6]]"))
	if want := [][]int{{1, 2, 3}, {4, 5, 6}}; err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("%v %v, want %v", got, err, want)
	}
	for _, c := range []struct{ path, want string }{
		{filepath.Join(dir, "missing.json"), "--ids-file: open " + filepath.Join(dir, "missing.json")},
		{write("obj.json", `{"a": 1}`), "--ids-file " + filepath.Join(dir, "obj.json") + ": want a JSON list of token-id lists: "},
		{write("empty.json", "[]"), "--ids-file " + filepath.Join(dir, "empty.json") + " holds no prompts"},
	} {
		if _, err := ReadPromptIDs(c.path); err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.path, err, c.want)
		}
	}
}
