package main

// Reading an evidence pack (CONTRACT section 7): a gzip'd POSIX tar with one
// top folder holding regular files only, mode 0644, mtime 0, sorted names.
// The whole pack is read into memory, bounded by maxPackBytes.

import (
	"archive/tar"
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"strings"
	"time"
)

// The files a pack may hold; consistency.json only when exported --since,
// checkpoint-time from manifest format 2 on, run-head.json in format 3 run
// packs (completeness.go reads both), team-window.json in team windows of
// format 4 (teamwindow.go).
var packFiles = map[string]bool{
	"checkpoint": true, "ledger.vkey": true, "entries.jsonl": true,
	"proofs.jsonl": true, "consistency.json": false, "outcomes.json": true,
	"manifest.json": true, "manifest.sig": true, "report.html": true, "checkpoint-time": false,
	"run-head.json": false, "team-window.json": false,
}

const maxPackBytes = 4 << 30

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
	gz, err := gzip.NewReader(f)
	if err != nil {
		return nil, fmt.Errorf("pack: not gzip: %v", err)
	}
	tr := tar.NewReader(gz)
	p := &pack{files: map[string][]byte{}}
	var total int64
	last := ""
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("pack: tar: %v", err)
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
		if err != nil {
			return nil, fmt.Errorf("pack: %s: %v", h.Name, err)
		}
		if int64(len(data)) != h.Size {
			return nil, fmt.Errorf("pack: %s: %d bytes, header says %d", h.Name, len(data), h.Size)
		}
		p.files[name] = data
	}
	// The rest of the gzip stream must be whole (its CRC checked).
	if _, err := io.Copy(io.Discard, io.LimitReader(gz, 1<<20)); err != nil {
		return nil, fmt.Errorf("pack: gzip: %v", err)
	}
	for name, required := range packFiles {
		if _, ok := p.files[name]; required && !ok {
			return nil, fmt.Errorf("pack: %s is missing", name)
		}
	}
	return p, nil
}

// member checks one tar header and returns the file's name in the top folder.
func (p *pack) member(h *tar.Header, last string) (string, error) {
	if h.Typeflag != tar.TypeReg {
		return "", fmt.Errorf("pack: %q is not a regular file (type %q)", h.Name, h.Typeflag)
	}
	top, name, ok := strings.Cut(h.Name, "/")
	if !ok || top == "" || top == "." || top == ".." || strings.Contains(name, "/") {
		return "", fmt.Errorf("pack: %q is not a file in one top folder", h.Name)
	}
	if p.top == "" {
		p.top = top
	} else if top != p.top {
		return "", fmt.Errorf("pack: %q is outside the top folder %q", h.Name, p.top)
	}
	if _, known := packFiles[name]; !known {
		return "", fmt.Errorf("pack: unknown file %q", h.Name)
	}
	if _, dup := p.files[name]; dup {
		return "", fmt.Errorf("pack: %q appears twice", h.Name)
	}
	if h.Name <= last {
		return "", fmt.Errorf("pack: %q comes after %q: names are not sorted", h.Name, last)
	}
	if h.Mode&0o7777 != 0o644 || !h.ModTime.Equal(zeroTime) {
		return "", fmt.Errorf("pack: %q has mode %o and mtime %d, expected 644 and 0", h.Name, h.Mode&0o7777, h.ModTime.Unix())
	}
	if h.Size < 0 || h.Size > maxPackBytes {
		return "", fmt.Errorf("pack: %q: size %d out of bounds", h.Name, h.Size)
	}
	return name, nil
}
