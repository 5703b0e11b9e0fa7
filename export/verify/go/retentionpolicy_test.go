package main

// The retention policy and the retention entry (CONTRACT section 9) against
// tests/vectors/retention.json, made from the contract's text: every policy
// read with its rules or refused with its exact message, every retention
// receipt accepted or refused naming the field the vector names.

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"
)

type retentionVectors struct {
	Policies struct {
		Accepted []struct {
			Name  string `json:"name"`
			Text  string `json:"text_utf8"`
			Rules []struct {
				Line  int    `json:"line"`
				Kind  string `json:"kind"`
				Team  string `json:"team"`
				Keep  string `json:"keep"`
				KeepS int64  `json:"keep_s"`
			} `json:"rules"`
		} `json:"accepted"`
		Refused []struct {
			Name  string `json:"name"`
			Text  string `json:"text_utf8"`
			Error string `json:"error"`
		} `json:"refused"`
	} `json:"policies"`
	Accepted []retentionReceiptVector `json:"accepted"`
	Refused  []retentionReceiptVector `json:"refused"`
}

type retentionReceiptVector struct {
	Name    string                 `json:"name"`
	Seq     int64                  `json:"seq"`
	Emitter string                 `json:"emitter"`
	Receipt map[string]interface{} `json:"receipt"`
	Field   string                 `json:"field"`
}

func readRetentionVectors(t *testing.T) retentionVectors {
	raw, err := os.ReadFile(vectors + "retention.json")
	if err != nil {
		t.Fatal(err)
	}
	var v retentionVectors
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

func TestRetentionPolicyVectorsAreReadWithTheirRules(t *testing.T) {
	v := readRetentionVectors(t)
	if len(v.Policies.Accepted) < 5 {
		t.Fatalf("%d accepted policies", len(v.Policies.Accepted))
	}
	for _, c := range v.Policies.Accepted {
		rules, err := readRetentionPolicy([]byte(c.Text))
		if err != nil {
			t.Errorf("%s: %v", c.Name, err)
			continue
		}
		if len(rules) != len(c.Rules) {
			t.Errorf("%s: %d rules, want %d", c.Name, len(rules), len(c.Rules))
			continue
		}
		for i, want := range c.Rules {
			got := rules[i]
			if got.line != want.Line || got.team != want.Team || got.keep != want.Keep || got.keepS != want.KeepS ||
				(want.Kind == "default") != (got.team == "") {
				t.Errorf("%s: rule %d: %+v, want %+v", c.Name, i, got, want)
			}
		}
	}
}

func TestRetentionPolicyVectorsAreRefusedWithTheirMessages(t *testing.T) {
	v := readRetentionVectors(t)
	if len(v.Policies.Refused) < 20 {
		t.Fatalf("%d refused policies", len(v.Policies.Refused))
	}
	for _, c := range v.Policies.Refused {
		if _, err := readRetentionPolicy([]byte(c.Text)); err == nil || err.Error() != c.Error {
			t.Errorf("%s:\n got: %v\nwant: %s", c.Name, err, c.Error)
		}
	}
}

func TestRetentionPolicyLinesAsTheContractReadsThem(t *testing.T) {
	for _, c := range []struct{ text, want string }{
		// A CR is part of its line: a word of its own, or the end of one.
		{"default 30d\r\n", "retention policy line 1: keep '30d\r': want forever, or 1h to 36500d as a decimal count and d or h"},
		{"#\r\n\r\ndefault 1d\n", "retention policy line 2: want 'default KEEP' or 'team T KEEP'"},
		{"team acme 7d\nteam acme 0h\n", "retention policy line 2: team 'acme': a second rule for the team (the first is on line 1)"},
		{"default 7d\ndefault 0h\n", "retention policy line 2: a second default rule (the first is on line 1)"},
		{"team  7d\n", "retention policy line 1: want 'default KEEP' or 'team T KEEP'"},
		{"default 99999999999999999999d\n", "retention policy line 1: keep '99999999999999999999d': want forever, or 1h to " +
			"36500d as a decimal count and d or h"},
		{"team - 7d\nteam ledger 0h\n", "retention policy line 2: team 'ledger': the ledger's own entries are never pruned"},
	} {
		if _, err := readRetentionPolicy([]byte(c.text)); err == nil || err.Error() != c.want {
			t.Errorf("%q:\n got: %v\nwant: %s", c.text, err, c.want)
		}
	}
}

func TestTheRuleCoveringATeamIsItsOwnElseTheDefault(t *testing.T) {
	rules, err := readRetentionPolicy([]byte("team acme 7d\ndefault 30d\nteam initech forever\n"))
	if err != nil {
		t.Fatal(err)
	}
	for team, want := range map[string]string{"acme": "team acme 7d", "initech": "team initech forever",
		"globex": "default 30d", "ledger": "none"} {
		got := "none"
		if r := coveringRule(rules, team); r != nil {
			got = r.name() + " " + r.keep
		}
		if got != want {
			t.Errorf("team %s: %s, want %s", team, got, want)
		}
	}
	noDefault, _ := readRetentionPolicy([]byte("team acme 7d\n"))
	if r := coveringRule(noDefault, "globex"); r != nil {
		t.Errorf("globex without a default rule: %+v", r)
	}
}

// retentionLeaf is the canonical leaf of seq holding the vector's receipt.
func retentionLeaf(t *testing.T, c retentionReceiptVector) []byte {
	raw, err := json.Marshal(map[string]interface{}{"emitter": c.Emitter, "logged_at_us": 1771545600000001,
		"prev": strings.Repeat("0", 64), "receipt": c.Receipt, "seq": c.Seq, "v": 2})
	if err != nil {
		t.Fatal(err)
	}
	v, err := parseJSON(raw)
	if err != nil {
		t.Fatal(err)
	}
	var leaf bytes.Buffer
	encodeCanonical(&leaf, v)
	return append(leaf.Bytes(), '\n')
}

func TestRetentionReceiptVectorsAreAccepted(t *testing.T) {
	v := readRetentionVectors(t)
	if len(v.Accepted) != 3 {
		t.Fatalf("%d accepted receipts", len(v.Accepted))
	}
	for _, c := range v.Accepted {
		e, r, err := readRetentionLine(retentionLeaf(t, c))
		if err != nil {
			t.Errorf("%s: %v", c.Name, err)
			continue
		}
		team, _ := c.Receipt["rule_team"].(string)
		num := func(k string) int64 {
			n, _ := c.Receipt[k].(json.Number)
			i, _ := n.Int64()
			return i
		}
		if e.seq != c.Seq || r.pass != num("pass") || r.ruleTeam != team || r.keepS != num("keep_s") ||
			r.cutoffUs != num("cutoff_us") || r.belowSeq != num("below_seq") || r.policySHA256 != c.Receipt["policy_sha256"] {
			t.Errorf("%s: read as %+v", c.Name, r)
		}
	}
}

func TestRetentionReceiptVectorsAreRefusedNamingTheField(t *testing.T) {
	v := readRetentionVectors(t)
	if len(v.Refused) < 20 {
		t.Fatalf("%d refused receipts", len(v.Refused))
	}
	for _, c := range v.Refused {
		_, _, err := readRetentionLine(retentionLeaf(t, c))
		if want := "retention.jsonl: line 1: " + c.Field + ": "; err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("%s:\n got: %v\nwant: %s...", c.Name, err, want)
		}
	}
}

func TestARetentionLineOfAnotherKindOrNotOneLineIsRefused(t *testing.T) {
	c := readRetentionVectors(t).Accepted[0]
	leaf := retentionLeaf(t, c)
	for _, x := range []struct {
		name string
		data []byte
		want string
	}{
		{"no newline", bytes.TrimSuffix(leaf, []byte("\n")), "retention.jsonl: want one line ending in a newline"},
		{"two lines", append(append([]byte{}, leaf...), leaf...), "retention.jsonl: want one line ending in a newline"},
		{"empty", nil, "retention.jsonl: want one line ending in a newline"},
		{"another kind", bytes.Replace(leaf, []byte(`"kind":"retention"`), []byte(`"kind":"redaction"`), 1),
			"retention.jsonl: line 1: kind redaction, want retention"},
		{"not canonical", bytes.Replace(leaf, []byte(`"seq":`), []byte(`"seq" :`), 1), "retention.jsonl: line 1: "},
		{"another field", bytes.Replace(leaf, []byte(`"receipt_id"`), []byte(`"pruned":1,"receipt_id"`), 1),
			"retention.jsonl: line 1: receipt: unknown key \"pruned\": not a field of a retention receipt"},
	} {
		if _, _, err := readRetentionLine(x.data); err == nil || !strings.HasPrefix(err.Error(), x.want) ||
			x.want != "retention.jsonl: line 1: " && err.Error() != x.want {
			t.Errorf("%s:\n got: %v\nwant: %s", x.name, err, x.want)
		}
	}
}
