package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// sampleValue is a value other than the default that --name of type typ
// accepts (a choice flag takes one of its allowed values).
func sampleValue(name, typ string) string {
	switch name {
	case "format":
		return "json"
	case "backend":
		return "cpu"
	}
	switch typ {
	case "bool":
		return "true"
	case "int":
		return "3"
	case "float64":
		return "0.125"
	case "duration":
		return "7s"
	}
	return "v-" + name
}

// Every flag of `run` is either forwarded to the child ranks of
// `run --nproc`, as given, or named in runLauncherOnly with its reason: a
// flag added to `run` and not to the list reaches the ranks, or this fails.
// Each forwarded value is parsed back by a child's own flag set to what the
// launcher was given.
func TestRankArgsForwardEveryRunFlag(t *testing.T) {
	for name := range runLauncherOnly {
		if newRunCmd().Flags().Lookup(name) == nil {
			t.Errorf("runLauncherOnly names --%s, which `run` does not have", name)
		}
	}
	var names []string
	newRunCmd().Flags().VisitAll(func(f *pflag.Flag) {
		if f.Name != "help" {
			names = append(names, f.Name)
		}
	})
	if len(names) < 25 {
		t.Fatalf("`run` has only %d flags: %v", len(names), names)
	}
	forwarded := 0
	for _, name := range names {
		launcher := newRunCmd()
		fl := launcher.Flags().Lookup(name)
		val := sampleValue(name, fl.Value.Type())
		if err := launcher.Flags().Parse([]string{"--config", "c.toml", "--" + name + "=" + val}); err != nil {
			t.Errorf("--%s=%s: %v", name, val, err)
			continue
		}
		args := rankArgs(launcher.Flags())
		if args[0] != "run" {
			t.Fatalf("child args %v: want `run` first", args)
		}
		_, skipped := runLauncherOnly[name]
		has := slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "--"+name+"=") })
		switch {
		case skipped && has:
			t.Errorf("--%s is launcher-only (%s) but reaches the child: %v", name, runLauncherOnly[name], args)
		case !skipped && !has:
			t.Errorf("--%s=%s does not reach the child: %v", name, val, args)
		case !skipped:
			forwarded++
			child := newRunCmd()
			if err := child.Flags().Parse(args[1:]); err != nil {
				t.Errorf("--%s: the child cannot parse %v: %v", name, args, err)
				continue
			}
			if got, want := child.Flags().Lookup(name).Value.String(), fl.Value.String(); got != want {
				t.Errorf("--%s: the child has %q, the launcher %q", name, got, want)
			}
		}
	}
	// Every flag was either forwarded or skipped (none failed to parse).
	if forwarded != len(names)-len(runLauncherOnly) {
		t.Errorf("%d flags forwarded of %d, %d launcher-only", forwarded, len(names), len(runLauncherOnly))
	}
	// Flags left at their defaults are not forwarded: the child's defaults
	// are the same.
	launcher := newRunCmd()
	if err := launcher.Flags().Parse([]string{"--config", "c.toml", "--nproc", "2"}); err != nil {
		t.Fatal(err)
	}
	if got := rankArgs(launcher.Flags()); !slices.Equal(got, []string{"run", "--config=c.toml"}) {
		t.Errorf("child args %v, want [run --config=c.toml]", got)
	}
}
