package main

// RFC 3161 time-stamps of the checkpoint-time note (CONTRACT section 5e),
// written from the section's text with Go's standard library: the
// time-stamp line found by its stamp ID, the DER TimeStampToken read with
// encoding/asn1 (CMS SignedData over a TSTInfo), its signed attributes,
// signature, signer certificate and chain (crypto/x509, at genTime), and
// the time rule.

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/rsa"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/x509"
	"encoding/asn1"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"math/big"
	"strconv"
	"strings"
	"time"
)

var (
	oidSignedData     = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 7, 2}
	oidTSTInfo        = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 9, 16, 1, 4}
	oidContentType    = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 9, 3}
	oidMessageDigest  = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 9, 4}
	oidSigningCert    = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 9, 16, 2, 12}
	oidSigningCertV2  = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 9, 16, 2, 47}
	oidSHA1           = asn1.ObjectIdentifier{1, 3, 14, 3, 2, 26}
	oidSHA256         = asn1.ObjectIdentifier{2, 16, 840, 1, 101, 3, 4, 2, 1}
	oidSHA384         = asn1.ObjectIdentifier{2, 16, 840, 1, 101, 3, 4, 2, 2}
	oidSHA512         = asn1.ObjectIdentifier{2, 16, 840, 1, 101, 3, 4, 2, 3}
	oidExtKeyUsage    = asn1.ObjectIdentifier{2, 5, 29, 37}
	stampIdentifier   = "evidence-ledger/rfc3161/v1"
	defaultStampDelay = int64(60)
)

// stamp is what an accepted token says.
type stamp struct {
	tsa     string // the signer certificate's first CN, else its subject
	genTime string // ISO 8601 UTC with the token's precision
	genUs   int64
}

// stampID is the 4-byte stamp ID of a TSA name (section 5e).
func stampID(name string) []byte {
	h := sha256.Sum256([]byte(name + "\n\xff" + stampIdentifier))
	return h[:4]
}

// stampTokens are the tokens of a signed note's time-stamp lines.
func stampTokens(n []byte) [][]byte {
	_, sigs, ok := bytes.Cut(n, []byte("\n\n"))
	if !ok {
		return nil
	}
	var out [][]byte
	for _, line := range strings.Split(string(sigs), "\n") {
		if !strings.HasPrefix(line, "\u2014 ") {
			continue
		}
		rest := strings.TrimPrefix(line, "\u2014 ")
		name, b64, ok := strings.Cut(rest, " ")
		if !ok {
			continue
		}
		data, err := base64.StdEncoding.DecodeString(b64)
		if err != nil || len(data) < 5 || !bytes.Equal(data[:4], stampID(name)) {
			continue
		}
		out = append(out, data[4:])
	}
	return out
}

// elements splits the content of a constructed DER value into its elements.
func elements(content []byte) ([]asn1.RawValue, error) {
	var out []asn1.RawValue
	for len(content) > 0 {
		var v asn1.RawValue
		rest, err := asn1.Unmarshal(content, &v)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
		content = rest
	}
	return out, nil
}

// one reads exactly one DER value, nothing after it.
func one(der []byte) (asn1.RawValue, error) {
	var v asn1.RawValue
	rest, err := asn1.Unmarshal(der, &v)
	if err == nil && len(rest) > 0 {
		err = errors.New("bytes follow its DER")
	}
	return v, err
}

func isUniversal(v asn1.RawValue, tag int) bool {
	return v.Class == asn1.ClassUniversal && v.Tag == tag
}

func isContext(v asn1.RawValue, tag int) bool {
	return v.Class == asn1.ClassContextSpecific && v.Tag == tag
}

// token is a TimeStampToken read: what its checks need.
type token struct {
	tstInfo      []byte // the eContent's octets
	imprintAlg   asn1.RawValue
	imprint      []byte
	genTime      time.Time
	genDigits    int
	certs        []*x509.Certificate
	sid          asn1.RawValue
	digestAlg    asn1.ObjectIdentifier
	signedAttrs  []byte // as in the token, [0] IMPLICIT
	signature    []byte
	signatureAlg asn1.ObjectIdentifier
}

func notAToken(why string, args ...interface{}) error {
	return fmt.Errorf("time stamp: not an RFC 3161 time-stamp token: %s", fmt.Sprintf(why, args...))
}

// parseToken reads section 5e's structure (step 3 of "What a verifier checks").
func parseToken(der []byte) (*token, error) {
	var ci struct {
		Type    asn1.ObjectIdentifier
		Content asn1.RawValue `asn1:"explicit,tag:0"`
	}
	if rest, err := asn1.Unmarshal(der, &ci); err != nil || len(rest) > 0 || !ci.Type.Equal(oidSignedData) {
		return nil, notAToken("not a CMS ContentInfo of SignedData")
	}
	// encoding/asn1 gives an EXPLICIT RawValue as the [0] wrapper: the
	// SignedData is its one element.
	inner, err := one(ci.Content.Bytes)
	if err != nil || !isUniversal(inner, asn1.TagSequence) {
		return nil, notAToken("a SignedData that does not parse")
	}
	sd, err := elements(inner.Bytes)
	if err != nil || len(sd) < 4 || !isUniversal(sd[0], asn1.TagInteger) {
		return nil, notAToken("a SignedData that does not parse")
	}
	var eci struct {
		Type    asn1.ObjectIdentifier
		Content []byte `asn1:"explicit,tag:0"`
	}
	if rest, err := asn1.Unmarshal(sd[2].FullBytes, &eci); err != nil || len(rest) > 0 || !eci.Type.Equal(oidTSTInfo) {
		return nil, notAToken("its content is not a TSTInfo")
	}
	t := &token{tstInfo: eci.Content}
	i := 3
	if i < len(sd) && isContext(sd[i], 0) {
		certs, err := elements(sd[i].Bytes)
		if err != nil {
			return nil, notAToken("its certificates do not parse")
		}
		for _, c := range certs {
			cert, err := x509.ParseCertificate(c.FullBytes)
			if err != nil {
				return nil, notAToken("a certificate: %v", err)
			}
			t.certs = append(t.certs, cert)
		}
		i++
	}
	if i < len(sd) && isContext(sd[i], 1) {
		i++
	}
	if i != len(sd)-1 || !isUniversal(sd[i], asn1.TagSet) {
		return nil, notAToken("no SignerInfos")
	}
	signers, err := elements(sd[i].Bytes)
	if err != nil || len(signers) != 1 {
		return nil, notAToken("%d SignerInfos, want one", len(signers))
	}
	if err := t.readSignerInfo(signers[0].Bytes); err != nil {
		return nil, err
	}
	return t, t.readTSTInfo()
}

func (t *token) readSignerInfo(content []byte) error {
	si, err := elements(content)
	if err != nil || len(si) < 5 {
		return notAToken("a SignerInfo that does not parse")
	}
	t.sid = si[1]
	var alg struct {
		Algorithm asn1.ObjectIdentifier
		Params    asn1.RawValue `asn1:"optional"`
	}
	if _, err := asn1.Unmarshal(si[2].FullBytes, &alg); err != nil {
		return notAToken("its digest algorithm")
	}
	t.digestAlg = alg.Algorithm
	j := 3
	if isContext(si[j], 0) {
		t.signedAttrs = si[j].FullBytes
		j++
	}
	if j+1 >= len(si) {
		return notAToken("a SignerInfo without its signature")
	}
	if _, err := asn1.Unmarshal(si[j].FullBytes, &alg); err != nil {
		return notAToken("its signature algorithm")
	}
	t.signatureAlg = alg.Algorithm
	if !isUniversal(si[j+1], asn1.TagOctetString) {
		return notAToken("its signature is not an OCTET STRING")
	}
	t.signature = si[j+1].Bytes
	return nil
}

func (t *token) readTSTInfo() error {
	info, err := one(t.tstInfo)
	if err != nil || !isUniversal(info, asn1.TagSequence) {
		return notAToken("a TSTInfo that does not parse")
	}
	f, err := elements(info.Bytes)
	if err != nil || len(f) < 5 {
		return notAToken("a TSTInfo that does not parse")
	}
	var version int
	if _, err := asn1.Unmarshal(f[0].FullBytes, &version); err != nil || version != 1 {
		return notAToken("TSTInfo version %d", version)
	}
	mi, err := elements(f[2].Bytes)
	if err != nil || len(mi) != 2 || !isUniversal(mi[1], asn1.TagOctetString) {
		return notAToken("a messageImprint that does not parse")
	}
	t.imprintAlg, t.imprint = mi[0], mi[1].Bytes
	if !isUniversal(f[4], asn1.TagGeneralizedTime) {
		return notAToken("genTime is not a GeneralizedTime")
	}
	if t.genTime, t.genDigits, err = generalizedTime(string(f[4].Bytes)); err != nil {
		return notAToken("genTime is not a GeneralizedTime in UTC")
	}
	return nil
}

// generalizedTime reads "YYYYMMDDHHMMSS[.f...]Z": the time and the digits
// of its fraction.
func generalizedTime(s string) (time.Time, int, error) {
	if len(s) < 15 || s[len(s)-1] != 'Z' {
		return time.Time{}, 0, errors.New("form")
	}
	base, frac := s[:14], s[14:len(s)-1]
	at, err := time.Parse("20060102150405", base)
	if err != nil {
		return time.Time{}, 0, err
	}
	if frac == "" {
		return at, 0, nil
	}
	if len(frac) < 2 || frac[0] != '.' {
		return time.Time{}, 0, errors.New("fraction")
	}
	digits := frac[1:]
	padded := (digits + "000000000")[:9]
	ns, err := strconv.Atoi(padded)
	if err != nil || strings.Trim(digits, "0123456789") != "" {
		return time.Time{}, 0, errors.New("fraction")
	}
	return at.Add(time.Duration(ns)), len(digits), nil
}

// isoTime writes a genTime as section 5e prints it, with its precision.
func isoTime(t time.Time, digits int) string {
	out := t.UTC().Format("2006-01-02T15:04:05")
	if digits > 0 {
		frac := fmt.Sprintf("%09d", t.Nanosecond())
		if digits > 6 {
			digits = 6
		}
		out += "." + frac[:digits]
	}
	return out + "Z"
}

// checkStampLine runs section 5e's "What a verifier checks" on the pack's
// checkpoint-time note n, whose time is timeUs.
func checkStampLine(n []byte, timeUs int64, roots *x509.CertPool, maxDelay int64) (*stamp, error) {
	tokens := stampTokens(n)
	if len(tokens) > 1 {
		return nil, errors.New("time stamp: more than one time-stamp line")
	}
	if len(tokens) == 0 {
		return nil, errors.New("time stamp: missing: --tsa-root requires the checkpoint-time note to carry a time-stamp token")
	}
	text, _, _ := bytes.Cut(n, []byte("\n\n"))
	text = append(append([]byte{}, text...), '\n')
	t, err := parseToken(tokens[0])
	if err != nil {
		return nil, err
	}
	var alg struct {
		Algorithm asn1.ObjectIdentifier
		Params    asn1.RawValue `asn1:"optional"`
	}
	if _, err := asn1.Unmarshal(t.imprintAlg.FullBytes, &alg); err != nil || !alg.Algorithm.Equal(oidSHA256) ||
		(len(alg.Params.FullBytes) > 0 && !bytes.Equal(alg.Params.FullBytes, []byte{5, 0})) {
		return nil, fmt.Errorf("time stamp: hash algorithm %v is not SHA-256", alg.Algorithm)
	}
	want := sha256.Sum256(text)
	if !bytes.Equal(t.imprint, want[:]) {
		return nil, fmt.Errorf("time stamp: it stamps another text (imprint %s, the note's text hashes to %s)",
			hex.EncodeToString(t.imprint), hex.EncodeToString(want[:]))
	}
	signer, err := t.checkSignature(roots)
	if err != nil {
		return nil, fmt.Errorf("time stamp: not signed by a TSA of --tsa-root: %v", err)
	}
	s := &stamp{tsa: signer.Subject.CommonName, genTime: isoTime(t.genTime, t.genDigits), genUs: t.genTime.UnixMicro()}
	if s.tsa == "" {
		s.tsa = signer.Subject.String()
	}
	return s, checkStampTime(timeUs, s, maxDelay)
}

// checkStampTime is section 5e's time rule.
func checkStampTime(timeUs int64, s *stamp, maxDelay int64) error {
	noteTime := isoTime(time.UnixMicro(timeUs), 3)
	if timeUs/1_000_000 > s.genUs/1_000_000 {
		return fmt.Errorf("time stamp: the note's time %s is after its stamp's time %s", noteTime, s.genTime)
	}
	if delay := s.genUs - timeUs; delay > maxDelay*1_000_000 {
		return fmt.Errorf("time stamp: the note's time %s is %d s before its stamp's time %s, more than the bound "+
			"of %d s: stamped late, or backdated", noteTime, delay/1_000_000, s.genTime, maxDelay)
	}
	return nil
}

// hashOf is the crypto.Hash of a digest algorithm section 5e allows.
func hashOf(oid asn1.ObjectIdentifier) (crypto.Hash, bool) {
	switch {
	case oid.Equal(oidSHA256):
		return crypto.SHA256, true
	case oid.Equal(oidSHA384):
		return crypto.SHA384, true
	case oid.Equal(oidSHA512):
		return crypto.SHA512, true
	}
	return 0, false
}

// checkSignature checks the signed attributes, the signature, the signer
// certificate's extended key usage and its chain to roots at genTime
// (step 6), and returns the signer's certificate.
func (t *token) checkSignature(roots *x509.CertPool) (*x509.Certificate, error) {
	signer, err := t.signer()
	if err != nil {
		return nil, err
	}
	h, ok := hashOf(t.digestAlg)
	if !ok {
		return nil, fmt.Errorf("digest algorithm %v", t.digestAlg)
	}
	if len(t.signedAttrs) == 0 {
		return nil, errors.New("no signed attributes")
	}
	if err := t.checkAttributes(h, signer); err != nil {
		return nil, err
	}
	set := append([]byte{0x31}, t.signedAttrs[1:]...)
	d := h.New()
	d.Write(set)
	digest := d.Sum(nil)
	switch pub := signer.PublicKey.(type) {
	case *ecdsa.PublicKey:
		if !ecdsa.VerifyASN1(pub, digest, t.signature) {
			return nil, errors.New("the signature does not verify")
		}
	case *rsa.PublicKey:
		if rsa.VerifyPKCS1v15(pub, h, digest, t.signature) != nil {
			return nil, errors.New("the signature does not verify")
		}
	default:
		return nil, errors.New("the signer's key is neither RSA nor ECDSA")
	}
	if err := checkTimeStampingEKU(signer); err != nil {
		return nil, err
	}
	intermediates := x509.NewCertPool()
	for _, c := range t.certs {
		if c != signer {
			intermediates.AddCert(c)
		}
	}
	_, err = signer.Verify(x509.VerifyOptions{Roots: roots, Intermediates: intermediates, CurrentTime: t.genTime,
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageTimeStamping}})
	return signer, err
}

// signer finds the SignerInfo's sid among the token's certificates.
func (t *token) signer() (*x509.Certificate, error) {
	for _, c := range t.certs {
		if isContext(t.sid, 0) && bytes.Equal(t.sid.Bytes, c.SubjectKeyId) {
			return c, nil
		}
		var ias struct {
			Issuer asn1.RawValue
			Serial *big.Int
		}
		if _, err := asn1.Unmarshal(t.sid.FullBytes, &ias); err == nil && isUniversal(t.sid, asn1.TagSequence) &&
			bytes.Equal(ias.Issuer.FullBytes, c.RawIssuer) && ias.Serial.Cmp(c.SerialNumber) == 0 {
			return c, nil
		}
	}
	return nil, errors.New("the signer's certificate is not in the token")
}

// checkAttributes: content-type, message-digest and a signing-certificate
// attribute naming the signer's certificate, each present one naming it.
func (t *token) checkAttributes(h crypto.Hash, signer *x509.Certificate) error {
	attrs, err := elements(t.signedAttrs[2+lengthBytes(t.signedAttrs):])
	if err != nil {
		return errors.New("the signed attributes do not parse")
	}
	var contentType, digest, essCert bool
	for _, a := range attrs {
		var attr struct {
			Type   asn1.ObjectIdentifier
			Values asn1.RawValue `asn1:"set"`
		}
		if _, err := asn1.Unmarshal(a.FullBytes, &attr); err != nil {
			return errors.New("a signed attribute does not parse")
		}
		values, err := elements(attr.Values.Bytes)
		if err != nil || len(values) != 1 {
			return fmt.Errorf("attribute %v: want one value", attr.Type)
		}
		v := values[0]
		switch {
		case attr.Type.Equal(oidContentType):
			var ct asn1.ObjectIdentifier
			if _, err := asn1.Unmarshal(v.FullBytes, &ct); err != nil || !ct.Equal(oidTSTInfo) {
				return errors.New("content-type is not id-ct-TSTInfo")
			}
			contentType = true
		case attr.Type.Equal(oidMessageDigest):
			d := h.New()
			d.Write(t.tstInfo)
			if !isUniversal(v, asn1.TagOctetString) || !bytes.Equal(v.Bytes, d.Sum(nil)) {
				return errors.New("message-digest is not the TSTInfo's digest")
			}
			digest = true
		case attr.Type.Equal(oidSigningCert), attr.Type.Equal(oidSigningCertV2):
			if err := checkESS(v, attr.Type.Equal(oidSigningCertV2), signer); err != nil {
				return err
			}
			essCert = true
		}
	}
	if !contentType || !digest || !essCert {
		return errors.New("the signed attributes lack content-type, message-digest or signing-certificate")
	}
	return nil
}

// lengthBytes is how many bytes of long-form length follow a DER tag.
func lengthBytes(der []byte) int {
	if der[1]&0x80 == 0 {
		return 0
	}
	return int(der[1] & 0x7f)
}

// checkESS: the first ESSCertID (v1: SHA-1; v2: its hash, SHA-256 by
// default) is the hash of the signer's certificate.
func checkESS(v asn1.RawValue, v2 bool, signer *x509.Certificate) error {
	seq, err := elements(v.Bytes)
	if err != nil || len(seq) < 1 {
		return errors.New("signing-certificate does not parse")
	}
	ids, err := elements(seq[0].Bytes)
	if err != nil || len(ids) < 1 {
		return errors.New("signing-certificate names no certificate")
	}
	id, err := elements(ids[0].Bytes)
	if err != nil || len(id) < 1 {
		return errors.New("signing-certificate: an ESSCertID that does not parse")
	}
	var want []byte
	hashed := id[0]
	if !v2 {
		s := sha1.Sum(signer.Raw)
		want = s[:]
	} else {
		h := crypto.SHA256
		if isUniversal(id[0], asn1.TagSequence) {
			var alg struct {
				Algorithm asn1.ObjectIdentifier
				Params    asn1.RawValue `asn1:"optional"`
			}
			var ok bool
			if _, err := asn1.Unmarshal(id[0].FullBytes, &alg); err != nil || len(id) < 2 {
				return errors.New("signing-certificate-v2: an ESSCertIDv2 that does not parse")
			}
			if h, ok = hashOf(alg.Algorithm); !ok && !alg.Algorithm.Equal(oidSHA1) {
				return fmt.Errorf("signing-certificate-v2: hash %v", alg.Algorithm)
			} else if !ok {
				h = crypto.SHA1
			}
			hashed = id[1]
		}
		d := h.New()
		d.Write(signer.Raw)
		want = d.Sum(nil)
	}
	if !isUniversal(hashed, asn1.TagOctetString) || !bytes.Equal(hashed.Bytes, want) {
		return errors.New("signing-certificate does not name the signer's certificate")
	}
	return nil
}

// checkTimeStampingEKU: extended key usage critical, timeStamping alone
// (RFC 3161 section 2.3).
func checkTimeStampingEKU(c *x509.Certificate) error {
	for _, e := range c.Extensions {
		if e.Id.Equal(oidExtKeyUsage) {
			if !e.Critical {
				return errors.New("the signer's extended key usage is not critical")
			}
			if len(c.ExtKeyUsage) != 1 || c.ExtKeyUsage[0] != x509.ExtKeyUsageTimeStamping || len(c.UnknownExtKeyUsage) > 0 {
				return errors.New("the signer's extended key usage is not timeStamping alone")
			}
			return nil
		}
	}
	return errors.New("the signer's certificate has no extended key usage")
}
