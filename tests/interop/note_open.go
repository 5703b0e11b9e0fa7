// Command note_open opens a signed note with Go's golang.org/x/mod/sumdb/note
// and the verifier keys given, and prints the note's text and the verified
// signers. A cosigned checkpoint must still open with the log's key alone:
// note.Open ignores signatures by unknown keys.
//
// Usage: go run note_open.go NOTE_FILE VKEY...
package main

import (
	"fmt"
	"os"

	"golang.org/x/mod/sumdb/note"
)

func main() {
	msg, err := os.ReadFile(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	var verifiers []note.Verifier
	for _, vkey := range os.Args[2:] {
		v, err := note.NewVerifier(vkey)
		if err != nil {
			fmt.Fprintln(os.Stderr, "vkey:", err)
			os.Exit(1)
		}
		verifiers = append(verifiers, v)
	}
	n, err := note.Open(msg, note.VerifierList(verifiers...))
	if err != nil {
		fmt.Fprintln(os.Stderr, "note.Open:", err)
		os.Exit(1)
	}
	fmt.Print(n.Text)
	for _, s := range n.Sigs {
		fmt.Printf("verified %s %08x\n", s.Name, s.Hash)
	}
	fmt.Printf("unverified %d\n", len(n.UnverifiedSigs))
}
