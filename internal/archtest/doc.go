// Package archtest keeps docs/architecture.md true: its test checks the
// import rules that document states against the packages' actual imports,
// and that every package has a doc comment and a row in the README's
// layout table and in docs/architecture.md. It has no code of its own.
package archtest
