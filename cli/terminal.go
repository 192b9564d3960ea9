package cli

import (
	"io"
	"os"

	"github.com/mattn/go-isatty"
)

// Terminal is implemented by an output that reports whether it is an
// interactive terminal. *os.File answers through isatty; tests pass a
// writer that implements it to see what a terminal would get.
type Terminal interface {
	IsTerminal() bool
}

// isTerminal reports whether w is an interactive terminal.
func isTerminal(w io.Writer) bool {
	switch t := w.(type) {
	case Terminal:
		return t.IsTerminal()
	case *os.File:
		return isatty.IsTerminal(t.Fd()) || isatty.IsCygwinTerminal(t.Fd())
	}
	return false
}

// palette colours human output. The zero palette writes plain text.
type palette struct{ on bool }

// newPalette colours output only for a terminal, and never when NO_COLOR is
// set (https://no-color.org) or the terminal is dumb.
func newPalette(w io.Writer, env func(string) string) palette {
	return palette{on: isTerminal(w) && env("NO_COLOR") == "" && env("TERM") != "dumb"}
}

func (p palette) wrap(code, s string) string {
	if !p.on || s == "" {
		return s
	}
	return "\x1b[" + code + "m" + s + "\x1b[0m"
}

func (p palette) green(s string) string  { return p.wrap("32", s) }
func (p palette) red(s string) string    { return p.wrap("31", s) }
func (p palette) yellow(s string) string { return p.wrap("33", s) }
func (p palette) bold(s string) string   { return p.wrap("1", s) }
func (p palette) dim(s string) string    { return p.wrap("2", s) }
