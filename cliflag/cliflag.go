package cliflag

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// Formats a command may accept for --format.
const (
	Table    = "table"
	Markdown = "markdown"
	CSV      = "csv"
	JSON     = "json"
	LaTeX    = "latex"
	DOT      = "dot"
)

// TableFormats are what every command that prints a table accepts.
var TableFormats = []string{Table, Markdown, CSV, JSON}

// Error is a flag value refused by this package's checks. Its message is
// the whole story ("--format: must be one of … (got "yaml")"), so
// FlagErrorFunc returns it without pflag's "invalid argument" preamble.
type Error struct{ msg string }

func (e *Error) Error() string { return e.msg }

// Check returns the one error every command gives for a value of flag
// outside allowed, or nil.
func Check(flag, value string, allowed ...string) error {
	if slices.Contains(allowed, value) {
		return nil
	}
	return &Error{fmt.Sprintf("--%s: must be one of %s (got %q)", flag, strings.Join(allowed, ", "), value)}
}

// choice is a string flag restricted to a set of values, checked at parse.
type choice struct {
	p       *string
	name    string
	allowed []string
}

func (c *choice) String() string { return *c.p }
func (c *choice) Type() string   { return "string" }
func (c *choice) Set(v string) error {
	if err := Check(c.name, v, c.allowed...); err != nil {
		return err
	}
	*c.p = v
	return nil
}

// Choice registers --name as a string restricted to allowed; the first
// allowed value is the default and the usage lists them all.
func Choice(fs *pflag.FlagSet, p *string, name, what string, allowed ...string) {
	*p = allowed[0]
	fs.Var(&choice{p: p, name: name, allowed: allowed}, name, what+": "+strings.Join(allowed, ", "))
}

// Format registers --format with allowed (the first is the default).
// Commands that print a table pass TableFormats, plus any extra form
// (latex, dot) after them.
func Format(fs *pflag.FlagSet, p *string, allowed ...string) {
	Choice(fs, p, "format", "output format", allowed...)
}

// Output registers --output FILE: where a command writes instead of
// standard output. old names earlier spellings kept as hidden aliases
// ("out"; "o" keeps -o working where it was the output, deprecated:
// nccl-tests gives -o to the reduction op).
func Output(fs *pflag.FlagSet, p *string, usage string, old ...string) {
	register(fs, p, "output", "", usage, old)
	MarkOutputFile(fs, "output")
}

// outputFileAnnotation marks a flag whose value is a file the command will
// write (--output, --trace, --logits-out, --save).
const outputFileAnnotation = "partbench_output_file"

// MarkOutputFile marks flags whose values are files the command writes, so
// CheckOutputFiles probes them before any work.
func MarkOutputFile(fs *pflag.FlagSet, names ...string) {
	for _, n := range names {
		if err := fs.SetAnnotation(n, outputFileAnnotation, []string{"true"}); err != nil {
			panic("cliflag: " + err.Error())
		}
	}
}

// CheckOutputFiles runs check on the value of every given flag marked as
// an output file, so a path that cannot be written is refused before the
// work, naming the flag and the path the user gave.
func CheckOutputFiles(fs *pflag.FlagSet, check func(path string) error) error {
	var err error
	fs.Visit(func(f *pflag.Flag) {
		if err != nil || f.Annotations[outputFileAnnotation] == nil || f.Value.String() == "" {
			return
		}
		if e := check(f.Value.String()); e != nil {
			err = fmt.Errorf("--%s %s: %w", f.Name, f.Value.String(), e)
		}
	})
	return err
}

// OutputDir registers --output-dir DIR: the directory a run writes its
// result files to, with old spellings as hidden aliases.
func OutputDir(fs *pflag.FlagSet, p *string, def, usage string, old ...string) {
	register(fs, p, "output-dir", def, usage, old)
}

func register(fs *pflag.FlagSet, p *string, name, def, usage string, old []string) {
	short := ""
	for _, o := range old {
		if len(o) == 1 {
			short = o
		}
	}
	fs.StringVarP(p, name, short, def, usage)
	if short != "" {
		// Hidden from help; using it prints "use --output" once (these
		// commands do not run under mpirun, so it is one line).
		_ = fs.MarkShorthandDeprecated(name, "use --"+name)
	}
	for _, o := range old {
		if len(o) > 1 {
			Alias(fs, o, name, true)
		}
	}
}

// Alias makes --alias set the same value as --name, hidden from help. The
// alias is silent when used (a warning from each of 16 ranks under mpirun,
// or inside a JSON stream on a shared terminal, helps nobody); deprecated
// ones are listed as such in the README and in the alias's usage.
func Alias(fs *pflag.FlagSet, alias, name string, deprecated bool) {
	f := fs.Lookup(name)
	if f == nil {
		panic("cliflag: alias of unknown flag --" + name)
	}
	usage := "alias of --" + name
	if deprecated {
		usage = "deprecated spelling of --" + name
	}
	fs.AddFlag(&pflag.Flag{Name: alias, Usage: usage, Value: f.Value, DefValue: f.DefValue, NoOptDefVal: f.NoOptDefVal, Hidden: true})
}

// noDefault hides a sentinel default from help (the usage text says what
// the default means instead).
type noDefault struct{ pflag.Value }

// DefaultInUsage marks flags whose usage text already says what their
// default means ("default: the config's run.warmup"), so help does not also
// print the sentinel ("(default -1)").
func DefaultInUsage(fs *pflag.FlagSet, names ...string) {
	for _, n := range names {
		f := fs.Lookup(n)
		f.Value, f.DefValue = noDefault{f.Value}, ""
	}
}

// Changed reports whether any of names was set on the command line.
func Changed(fs *pflag.FlagSet, names ...string) bool {
	for _, n := range names {
		if f := fs.Lookup(n); f != nil && f.Changed {
			return true
		}
	}
	return false
}

// FlagErrorFunc is the root command's flag error handler: a value refused
// by this package is reported in its own words, other errors as cobra
// words them.
func FlagErrorFunc(_ *cobra.Command, err error) error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return err
}

// Underscores lets --a_b mean --a-b, as torchrun and nccl-tests accept both
// (--nproc_per_node, --warmup_iters).
func Underscores(fs *pflag.FlagSet) {
	fs.SetNormalizeFunc(func(_ *pflag.FlagSet, name string) pflag.NormalizedName {
		return pflag.NormalizedName(strings.ReplaceAll(name, "_", "-"))
	})
}

// finite is a float64 flag that refuses NaN and ±Inf when it is parsed.
type finite struct {
	p    *float64
	name string
}

func (f *finite) String() string { return strconv.FormatFloat(*f.p, 'g', -1, 64) }
func (f *finite) Type() string   { return "float64" }
func (f *finite) Set(v string) error {
	x, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return &Error{fmt.Sprintf("--%s: must be a number (got %q)", f.name, v)}
	}
	if err != nil || math.IsNaN(x) || math.IsInf(x, 0) {
		return &Error{fmt.Sprintf("--%s: must be a finite number (got %q)", f.name, v)}
	}
	*f.p = x
	return nil
}

// FiniteFloat registers --name as a float64 that is refused at parse time,
// naming the flag, when it is NaN, ±Inf or out of float64's range ("1e999"):
// every float flag of a command is one, so a non-finite value never reaches
// an estimate, a comparison or a results file.
func FiniteFloat(fs *pflag.FlagSet, p *float64, name string, def float64, usage string) {
	*p = def
	fs.Var(&finite{p: p, name: name}, name, usage)
}
