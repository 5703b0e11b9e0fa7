package main

import (
	"crypto/ed25519"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"

	"golang.org/x/mod/sumdb/note"
)

type policyVectors struct {
	LogVKey    string `json:"log_vkey"`
	Checkpoint string `json:"checkpoint"`
	Witnesses  []struct {
		Name        string `json:"name"`
		VKey        string `json:"vkey"`
		Time        uint64 `json:"time"`
		Cosignature string `json:"cosignature"`
	} `json:"witnesses"`
	Policy string `json:"policy"`
	Cases  []struct {
		Cosigners []string `json:"cosigners"`
		Quorum    bool     `json:"quorum"`
		Missing   []string `json:"missing"`
		Note      string   `json:"note"`
	} `json:"cases"`
	BadPolicies []struct {
		Text  string `json:"text"`
		Error string `json:"error"`
	} `json:"bad_policies"`
}

func readPolicyVectors(t *testing.T) policyVectors {
	raw, err := os.ReadFile(vectors + "tlog_policy.json")
	if err != nil {
		t.Fatal(err)
	}
	var v policyVectors
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

func TestPolicyVectorsQuorumAndMissingWitnesses(t *testing.T) {
	v := readPolicyVectors(t)
	p, err := parsePolicy([]byte(v.Policy))
	if err != nil {
		t.Fatal(err)
	}
	logKey, err := parseVKey(v.LogVKey, typeEd25519)
	if err != nil || !p.isLog(logKey) || p.quorum != "XY" {
		t.Fatalf("the vectors' log or quorum: %v %v %q", err, p.isLog(logKey), p.quorum)
	}
	log, err := note.NewVerifier(v.LogVKey)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range v.Cases {
		got, err := checkWitnessed(p, []byte(c.Note), log)
		if c.Quorum {
			var names []string
			for _, g := range got {
				names = append(names, g.witness)
			}
			if err != nil || !reflect.DeepEqual(names, c.Cosigners) {
				t.Errorf("cosigned by %v: got %v, %v", c.Cosigners, names, err)
			}
			continue
		}
		want := "checkpoint: the policy's quorum XY is not met: no cosignature from " + strings.Join(c.Missing, ", ")
		if len(c.Cosigners) > 0 {
			want += "; cosigned by " + strings.Join(c.Cosigners, ", ")
		}
		if err == nil || err.Error() != want {
			t.Errorf("cosigned by %v: got %v, want %q", c.Cosigners, err, want)
		}
	}
}

func TestPolicyVectorsBadPoliciesRefusedNamingTheLine(t *testing.T) {
	for _, b := range readPolicyVectors(t).BadPolicies {
		_, err := parsePolicy([]byte(b.Text))
		pe, ok := err.(*policyError)
		if !ok {
			t.Errorf("%q: got %v, want %q", b.Text, err, b.Error)
			continue
		}
		got := "policy: " + pe.msg
		if pe.line > 0 {
			got = fmt.Sprintf("policy line %d: %s", pe.line, pe.msg)
		}
		if got != b.Error {
			t.Errorf("%q: got %q, want %q", b.Text, got, b.Error)
		}
	}
}

// The cosignature verifier is a note.Verifier: sumdb's note.Open verifies
// the witnesses' lines with it beside the log's key.
func TestCosignatureVerifierOpensTheVectorsWithNoteOpen(t *testing.T) {
	v := readPolicyVectors(t)
	log, _ := note.NewVerifier(v.LogVKey)
	verifiers := []note.Verifier{log}
	for _, w := range v.Witnesses {
		k, err := parseVKey(w.VKey, typeCosignature)
		if err != nil {
			t.Fatal(err)
		}
		verifiers = append(verifiers, cosignatureVerifier{k})
	}
	all := v.Cases[len(v.Cases)-1].Note
	n, err := note.Open([]byte(all), note.VerifierList(verifiers...))
	if err != nil || len(n.Sigs) != 5 || len(n.UnverifiedSigs) != 0 {
		t.Fatalf("note.Open: %v, %d verified", err, len(n.Sigs))
	}
	for i, w := range v.Witnesses {
		raw, _ := base64.StdEncoding.DecodeString(n.Sigs[i+1].Base64)
		if n.Sigs[i+1].Name != verifiers[i+1].Name() || binary.BigEndian.Uint64(raw[4:12]) != w.Time {
			t.Errorf("witness %s: signature %d is %+v", w.Name, i+1, n.Sigs[i+1])
		}
	}
	// One byte of the last cosignature's signature changed: note.Open
	// refuses the note.
	at := strings.LastIndex(all, " ") + 1
	raw, _ := base64.StdEncoding.DecodeString(strings.TrimSuffix(all[at:], "\n"))
	raw[40] ^= 1
	changed := all[:at] + base64.StdEncoding.EncodeToString(raw) + "\n"
	if _, err := note.Open([]byte(changed), note.VerifierList(verifiers...)); err == nil {
		t.Error("note.Open accepted a changed cosignature")
	}
}

func TestCosignatureVector(t *testing.T) {
	raw, err := os.ReadFile(vectors + "cosignature.json")
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		Name       string `json:"name"`
		Checkpoint string `json:"checkpoint"`
		Time       uint64 `json:"time"`
		PublicKey  string `json:"public_key_hex"`
		VKey       string `json:"vkey"`
		Signed     string `json:"signed_message"`
		Line       string `json:"cosignature"`
		KeyID      string `json:"key_id_hex"`
	}
	if err := json.Unmarshal(raw, &c); err != nil {
		t.Fatal(err)
	}
	k, err := parseVKey(c.VKey, typeCosignature)
	if err != nil || k.name != c.Name || fmt.Sprintf("%08x", k.hash) != c.KeyID || hex.EncodeToString(k.public) != c.PublicKey {
		t.Fatalf("vkey %q: %+v %v", c.VKey, k, err)
	}
	prefix := "\u2014 " + c.Name + " "
	if !strings.HasPrefix(c.Line, prefix) {
		t.Fatalf("line %q", c.Line)
	}
	sig, _ := base64.StdEncoding.DecodeString(strings.TrimSuffix(c.Line[len(prefix):], "\n"))
	if got, ok := cosignatureTime(k, []byte(c.Checkpoint), sig[4:]); !ok || got != c.Time {
		t.Errorf("cosignatureTime: %d %v, want %d", got, ok, c.Time)
	}
	if !ed25519.Verify(k.public, []byte(c.Signed), sig[12:]) {
		t.Error("the signature is not over the vectors' signed message")
	}
	if _, ok := cosignatureTime(k, []byte(c.Checkpoint+"x\n"), sig[4:]); ok {
		t.Error("verifies over another checkpoint")
	}
	binary.BigEndian.PutUint64(sig[4:12], 0)
	if _, ok := cosignatureTime(k, []byte(c.Checkpoint), sig[4:]); ok {
		t.Error("a time of 0 accepted")
	}
}

func TestPolicySyntaxRules(t *testing.T) {
	w := "witness W w1.example+f08012df+BGd6dNlk5KhP+lAlqLVTe1xKN61tFG6FR4Osc0aEogfE"
	for _, c := range []struct{ text, err string }{
		{"  # comment\n\t" + w + "\t http://w.example  \n\nquorum W", ""},
		{w + "\ngroup G any W\ngroup H all G W\nquorum H\n", ""},
		{"quorum none\r\n", "line 1: byte 0x0d: only tab, newline, printable ASCII and bytes above 0x7f are allowed"},
		{w + "\ngroup W any W\nquorum W\n", "line 2: 'W' is already defined on line 1"},
		{w + "\ngroup G any G\nquorum G\n", "line 2: member 'G' is not defined on an earlier line"},
		{w + "\ngroup G any none\nquorum G\n", "line 2: 'none' cannot be a group member"},
		{w + "\ngroup G 0 W\nquorum G\n", "line 2: threshold must be all, any or a decimal k with 1 <= k <= 1"},
		{w + "\ngroup G W\nquorum G\n", "line 2: want 'group NAME all|any|K MEMBER...' with at least one member"},
		{"quorum X\n", "line 1: quorum 'X' is not defined on an earlier line"},
		{"witnesses W\n", "line 1: unknown keyword 'witnesses' (want log, witness, group, quorum, monitor or monitor-quorum)"},
		{w + "\nwitness V " + strings.Fields(w)[2] + "\nquorum W\n", "line 2: this witness's key is listed twice"},
	} {
		_, err := parsePolicy([]byte(c.text))
		if (err == nil) != (c.err == "") || (err != nil && err.Error() != c.err) {
			t.Errorf("%q: got %v, want %q", c.text, err, c.err)
		}
	}
}

func TestUTCSecondsPastYear9999(t *testing.T) {
	for secs, want := range map[uint64]string{
		1:            "1970-01-01T00:00:01Z",
		951782400:    "2000-02-29T00:00:00Z",
		1767225600:   "2026-01-01T00:00:00Z",
		253402300799: "9999-12-31T23:59:59Z",
		253402300800: "10000-01-01T00:00:00Z",
		1<<63 - 1:    "292277026596-12-04T15:30:07Z",
	} {
		if got := utcSeconds(secs); got != want {
			t.Errorf("utcSeconds(%d) = %s, want %s", secs, got, want)
		}
	}
}
