package main

// The time-stamp checks of section 5e against tests/vectors/timestamp.json
// (notes stamped by a real TSA, openssl ts -reply).

import (
	"crypto/x509"
	"encoding/json"
	"os"
	"strconv"
	"strings"
	"testing"
)

type stampVectors struct {
	Roots      string `json:"tsa_roots_pem"`
	OtherRoots string `json:"other_roots_pem"`
	MaxDelay   int64  `json:"max_delay_s"`
	Cases      []struct {
		Name    string `json:"name"`
		Note    string `json:"note"`
		Want    string `json:"want"`
		TSA     string `json:"tsa"`
		GenTime string `json:"gen_time"`
		Error   string `json:"error"`
	} `json:"cases"`
}

func readStampVectors(t *testing.T) (stampVectors, *x509.CertPool, *x509.CertPool) {
	raw, err := os.ReadFile(vectors + "timestamp.json")
	if err != nil {
		t.Fatal(err)
	}
	var v stampVectors
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	roots, other := x509.NewCertPool(), x509.NewCertPool()
	if !roots.AppendCertsFromPEM([]byte(v.Roots)) || !other.AppendCertsFromPEM([]byte(v.OtherRoots)) {
		t.Fatal("the vectors' roots do not parse")
	}
	return v, roots, other
}

// noteTimeUs is the `time` line of a note's text.
func noteTimeUs(t *testing.T, n string) int64 {
	for _, line := range strings.Split(strings.SplitN(n, "\n\n", 2)[0], "\n") {
		if strings.HasPrefix(line, "time ") {
			v, err := strconv.ParseInt(strings.TrimPrefix(line, "time "), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return v
		}
	}
	t.Fatalf("no time line in %q", n)
	return 0
}

func TestStampVectorsGiveTheirVerdicts(t *testing.T) {
	v, roots, _ := readStampVectors(t)
	if len(v.Cases) < 10 {
		t.Fatalf("%d cases", len(v.Cases))
	}
	for _, c := range v.Cases {
		s, err := checkStampLine([]byte(c.Note), noteTimeUs(t, c.Note), roots, v.MaxDelay)
		if c.Want == "ok" {
			if err != nil || s.tsa != c.TSA || s.genTime != c.GenTime {
				t.Errorf("%s: %+v, %v; want %s at %s", c.Name, s, err, c.TSA, c.GenTime)
			}
		} else if err == nil || !strings.Contains(err.Error(), c.Error) {
			t.Errorf("%s: %v; want %q", c.Name, err, c.Error)
		}
	}
}

func TestStampOfAnotherTSAsRootOrPastTheBoundIsRefused(t *testing.T) {
	v, roots, other := readStampVectors(t)
	good := v.Cases[0]
	if _, err := checkStampLine([]byte(good.Note), noteTimeUs(t, good.Note), other, 60); err == nil ||
		!strings.Contains(err.Error(), "not signed by a TSA of --tsa-root") {
		t.Errorf("another TSA's root: %v", err)
	}
	for _, c := range v.Cases {
		if !strings.Contains(c.Name, "within the bound") {
			continue
		}
		if _, err := checkStampLine([]byte(c.Note), noteTimeUs(t, c.Note), roots, 10); err == nil ||
			!strings.Contains(err.Error(), "more than the bound of 10 s") {
			t.Errorf("a bound of 10 s: %v", err)
		}
		return
	}
	t.Error("no case within the bound")
}

func TestStampLinesAreFoundByTheirOwnNamesID(t *testing.T) {
	v, _, _ := readStampVectors(t)
	n := v.Cases[0].Note
	if len(stampTokens([]byte(n))) != 1 {
		t.Fatal("the good case's stamp line not found")
	}
	if len(stampTokens([]byte(strings.Replace(n, "\u2014 tsa ", "\u2014 tsb ", 1)))) != 0 {
		t.Error("a line renamed is still taken for a stamp")
	}
}
