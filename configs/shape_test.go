package configs

import (
	"io/fs"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestCheckTOMLShape(t *testing.T) {
	dotted := func(n int) string { return "a" + strings.Repeat(".a", n-1) + " = 1\n" }
	nested := func(n int) string { return "x = " + strings.Repeat("{a = ", n) + "1" + strings.Repeat("}", n) + "\n" }
	arrays := func(n int) string { return "x = " + strings.Repeat("[", n) + "1" + strings.Repeat("]", n) + "\n" }
	for _, c := range []struct {
		name, doc, want string // want "" : accepted
	}{
		{"16 parts", dotted(MaxKeyParts), ""},
		{"17 parts", dotted(MaxKeyParts + 1), "t.toml:1: key a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a… has more than 16 dotted parts"},
		{"20,000 parts", dotted(20000), "has more than 16 dotted parts"},
		{"header of 17 parts", "[" + strings.Repeat("a.", 16) + "a]\n", "t.toml:1: key a.a."},
		{"array header of 17 parts", "[[" + strings.Repeat("a.", 16) + "a]]\n", "has more than 16 dotted parts"},
		{"inline key of 17 parts", "x = {b = 1, " + strings.TrimSuffix(dotted(17), "\n") + "}\n", "has more than 16 dotted parts"},
		// Dots in values, strings and comments are not key parts.
		{"dots elsewhere", "x = 1.5\ny = \"" + strings.Repeat("a.", 100) + "\"\n# " + strings.Repeat(".", 100) + "\nz = [1.5, 2.5, {c.d = 'e.f.g'}]\nw = \"\"\"\n" + strings.Repeat("a.", 100) + "\n\"\"\"\n", ""},
		{"quoted parts", `"a"."b".'c' = 1` + "\n", ""},
		{"nested 16", nested(MaxNesting), ""},
		{"nested 17", nested(MaxNesting + 1), "t.toml:1: arrays and inline tables nested more than 16 deep"},
		{"nested 3,000", "version = 1\n" + nested(3000), "t.toml:2: arrays and inline tables nested more than 16 deep"},
		{"arrays 17", arrays(MaxNesting + 1), "nested more than 16 deep"},
		{"multi-line array", "x = [\n  [1, 2],\n  [3, 4],\n]\ny.z = 2\n", ""},
		{"long key", strings.Repeat("k", MaxKeyBytes+1) + " = 1\n", "is longer than 1024 bytes"},
		{"long quoted key", `"` + strings.Repeat("k", MaxKeyBytes) + `" = 1` + "\n", "is longer than 1024 bytes"},
		{"long string value", "description = \"" + strings.Repeat("v", 10*MaxKeyBytes) + "\"\n", ""},
	} {
		start := time.Now()
		err := CheckTOMLShape([]byte(c.doc), "t.toml")
		if d := time.Since(start); d > time.Second {
			t.Errorf("%s: took %v", c.name, d)
		}
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: refused: %v", c.name, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: err = %v, want %q", c.name, err, c.want)
		case err != nil && len(err.Error()) > 300:
			t.Errorf("%s: a %d-byte error", c.name, len(err.Error()))
		}
	}
}

// Every embedded TOML file (configs, presets, claims, calibrations) is
// inside the bounds.
func TestEmbeddedTOMLInsideShapeBounds(t *testing.T) {
	n := 0
	err := fs.WalkDir(Files, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".toml") {
			return err
		}
		data, err := fs.ReadFile(Files, path)
		if err != nil {
			return err
		}
		n++
		if err := CheckTOMLShape(data, path); err != nil {
			t.Error(err)
		}
		return nil
	})
	if err != nil || n < 20 {
		t.Fatalf("walked %d embedded TOML files: %v", n, err)
	}
}

// Issue 24 item 7: the 40 KB dotted key and the 3,000-deep inline table are
// refused by Parse quickly with a short error (before: 125 s and 5.3 GB, 15 s
// and a 9 MB error); a config with thousands of unknown keys lists ten and
// counts the rest.
func TestParseRefusesHostileShapesFast(t *testing.T) {
	var many strings.Builder
	many.WriteString("version = 1\n[model]\npreset = \"tiny-gpt2\"\n")
	for i := range 5000 {
		many.WriteString("unknown_" + strconv.Itoa(i) + " = 1\n")
	}
	for _, c := range []struct{ name, doc, want string }{
		{"dotted", "a" + strings.Repeat(".a", 19999) + " = 1\n", "has more than 16 dotted parts"},
		{"deep", "version = 1\nx = " + strings.Repeat("{a = ", 3000) + "1" + strings.Repeat("}", 3000) + "\n", "nested more than 16 deep"},
		// 5,000 unknown keys: ten listed, 4,990 counted.
		{"unknown keys", many.String(), "model.unknown_9 and 4990 more (check spelling"},
	} {
		start := time.Now()
		_, err := Parse(strings.NewReader(c.doc), "hostile.toml")
		d := time.Since(start)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Fatalf("%s: err = %v, want %q", c.name, err, c.want)
		}
		if len(err.Error()) > 1000 {
			t.Errorf("%s: a %d-byte error: %.200s…", c.name, len(err.Error()), err)
		}
		if d > 5*time.Second {
			t.Errorf("%s: refused after %v", c.name, d)
		}
		t.Logf("%s (%d bytes): refused in %v with a %d-byte error", c.name, len(c.doc), d, len(err.Error()))
	}
}
