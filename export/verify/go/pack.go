package main

// Reading an evidence pack (CONTRACT section 7): a gzip'd POSIX tar with one
// top folder holding regular files only, mode 0644, mtime 0, sorted names.
// The whole pack is read into memory, bounded by maxPackBytes.

import (
	"archive/tar"
	"bufio"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"
)

// The files a pack may hold; consistency.json only when exported --since,
// checkpoint-time from manifest format 2 on, run-head.json in run packs of
// format 3 or later (completeness.go reads both), team-window.json in team windows of
// format 4 or later (teamwindow.go), proofs.jsonl in formats 1 to 5 and
// multiproof.txt from format 6 (checkProofFiles), redactions.jsonl in
// formats 8 and 9 (redactions.go), retention.jsonl and retention-policy.txt
// in format 9 (retention.go).
var packFiles = map[string]bool{
	"checkpoint": true, "ledger.vkey": true, "entries.jsonl": true,
	"proofs.jsonl": false, "multiproof.txt": false, "consistency.json": false, "outcomes.json": true,
	"manifest.json": true, "manifest.sig": true, "report.html": true, "checkpoint-time": false,
	"run-head.json": false, "team-window.json": false, "redactions.jsonl": false, "retention.jsonl": false,
	"retention-policy.txt": false,
}

const maxPackBytes = 4 << 30

// The JSON files of a pack other than entries, proofs and outcomes are at
// most 1 MiB.
var smallJSON = map[string]bool{"manifest.json": true, "consistency.json": true, "run-head.json": true,
	"team-window.json": true}

const maxSmallJSON = 1 << 20

var errAfterGzip = errors.New("pack: bytes after the gzip stream")

// members reads a gzip file member after member (RFC 1952 2.2, as packs
// are written), and refuses bytes after the last member that are no gzip
// member.
type members struct {
	br *bufio.Reader
	gz *gzip.Reader
}

func (m *members) Read(b []byte) (int, error) {
	for {
		n, err := m.gz.Read(b)
		if err != io.EOF || n > 0 {
			return n, err
		}
		if _, err := m.br.Peek(1); err == io.EOF {
			return 0, io.EOF
		} else if err != nil {
			return 0, err
		}
		if err := m.gz.Reset(m.br); err != nil {
			return 0, errAfterGzip
		}
		m.gz.Multistream(false)
	}
}

var zeroTime = time.Unix(0, 0)

type pack struct {
	top   string
	files map[string][]byte
}

func readPack(path string) (*pack, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("pack: %v", err)
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, 1<<16)
	gz, err := gzip.NewReader(br)
	if err != nil {
		return nil, fmt.Errorf("pack: not gzip: %v", err)
	}
	gz.Multistream(false)
	stream := &members{br, gz}
	tr := tar.NewReader(stream)
	p := &pack{files: map[string][]byte{}}
	var total int64
	last := ""
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if errors.Is(err, errAfterGzip) {
			return nil, err
		}
		if err != nil {
			return nil, fmt.Errorf("pack: tar: %v", err)
		}
		if p.topDirectory(h, last) {
			last = h.Name
			continue
		}
		name, err := p.member(h, last)
		if err != nil {
			return nil, err
		}
		last = h.Name
		total += h.Size
		if total > maxPackBytes {
			return nil, fmt.Errorf("pack: more than %d bytes of files", int64(maxPackBytes))
		}
		data, err := io.ReadAll(io.LimitReader(tr, h.Size+1))
		if errors.Is(err, errAfterGzip) {
			return nil, err
		}
		if err != nil {
			return nil, fmt.Errorf("pack: %s: %v", h.Name, err)
		}
		if int64(len(data)) != h.Size {
			return nil, fmt.Errorf("pack: %s: %d bytes, header says %d", h.Name, len(data), h.Size)
		}
		p.files[name] = data
	}
	// The rest of the gzip stream must be whole (its CRC checked), with
	// nothing after it.
	if n, err := io.Copy(io.Discard, io.LimitReader(stream, 1<<20+1)); errors.Is(err, errAfterGzip) {
		return nil, err
	} else if err != nil {
		return nil, fmt.Errorf("pack: gzip: %v", err)
	} else if n > 1<<20 {
		return nil, fmt.Errorf("pack: more than 1 MiB after the tar archive's end")
	}
	for name, required := range packFiles {
		if _, ok := p.files[name]; required && !ok {
			return nil, fmt.Errorf("pack: %s is missing", name)
		}
	}
	return p, nil
}

// topDirectory reports whether h is the top folder's own directory entry
// ("evidence/"), the one member that is not a regular file a pack may hold:
// first, mtime 0, no content.
func (p *pack) topDirectory(h *tar.Header, last string) bool {
	top := strings.TrimSuffix(h.Name, "/")
	if h.Typeflag != tar.TypeDir || last != "" || top == "" || top == "." || top == ".." || strings.Contains(top, "/") ||
		!h.ModTime.Equal(zeroTime) || h.Size != 0 {
		return false
	}
	p.top = top
	return true
}

// member checks one tar header and returns the file's name in the top folder.
func (p *pack) member(h *tar.Header, last string) (string, error) {
	if h.Typeflag != tar.TypeReg {
		return "", fmt.Errorf("pack: \"%s\" is not a regular file (type '%s')", h.Name, string([]byte{h.Typeflag}))
	}
	top, name, ok := strings.Cut(h.Name, "/")
	if !ok || top == "" || top == "." || top == ".." || strings.Contains(name, "/") {
		return "", fmt.Errorf("pack: \"%s\" is not a file in one top folder", h.Name)
	}
	if p.top == "" {
		p.top = top
	} else if top != p.top {
		return "", fmt.Errorf("pack: \"%s\" is outside the top folder \"%s\"", h.Name, p.top)
	}
	if _, known := packFiles[name]; !known {
		return "", fmt.Errorf("pack: unknown file \"%s\"", h.Name)
	}
	if _, dup := p.files[name]; dup {
		return "", fmt.Errorf("pack: \"%s\" appears twice", h.Name)
	}
	if h.Name <= last {
		return "", fmt.Errorf("pack: \"%s\" comes after \"%s\": names are not sorted", h.Name, last)
	}
	if h.Mode&0o7777 != 0o644 || !h.ModTime.Equal(zeroTime) {
		return "", fmt.Errorf("pack: \"%s\" has mode %o and mtime %d, expected 644 and 0", h.Name, h.Mode&0o7777, h.ModTime.Unix())
	}
	if h.Size < 0 || h.Size > maxPackBytes {
		return "", fmt.Errorf("pack: \"%s\": size %d out of bounds", h.Name, h.Size)
	}
	if smallJSON[name] && h.Size > maxSmallJSON {
		return "", fmt.Errorf("%s: larger than 1 MiB (%d bytes)", name, h.Size)
	}
	return name, nil
}
