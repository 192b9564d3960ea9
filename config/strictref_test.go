package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// parseStrictByTokens is the strict parser as it was written on the tokens
// of encoding/json's Decoder: the reference parseStrict is held to.
func parseStrictByTokens(raw []byte, base string) (v any, problems []FieldError, ok bool) {
	p := &tokenParser{dec: json.NewDecoder(bytes.NewReader(raw)), raw: raw, base: base}
	p.dec.UseNumber()
	v, err := p.value(0)
	if err == nil {
		if _, extra := p.dec.Token(); extra != io.EOF {
			err = errors.New("unexpected data after the JSON value")
		}
	}
	if err != nil {
		detail := "The value is not valid JSON."
		if errors.Is(err, errTooDeep) {
			detail = "The value is nested too deeply."
		}
		return nil, []FieldError{{Pointer: base, Code: CodeMalformedRequest, Detail: detail}}, false
	}
	return v, p.dups, true
}

type tokenParser struct {
	dec  *json.Decoder
	raw  []byte
	base string
	path []string
	dups []FieldError
}

func (p *tokenParser) value(depth int) (any, error) {
	tok, err := p.dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		if depth >= maxDepth {
			return nil, errTooDeep
		}
		if t == '[' {
			list := []any{}
			for p.dec.More() {
				p.path = append(p.path, strconv.Itoa(len(list)))
				v, err := p.value(depth + 1)
				p.path = p.path[:len(p.path)-1]
				if err != nil {
					return nil, err
				}
				list = append(list, v)
			}
			_, err := p.dec.Token()
			return list, err
		}
		start := p.dec.InputOffset() - 1
		obj := &jsonObject{vals: map[string]any{}}
		for p.dec.More() {
			kt, err := p.dec.Token()
			if err != nil {
				return nil, err
			}
			key, _ := kt.(string)
			p.path = append(p.path, key)
			v, err := p.value(depth + 1)
			if err != nil {
				return nil, err
			}
			if _, dup := obj.vals[key]; dup {
				p.dups = append(p.dups, FieldError{Pointer: p.base + Pointer(p.path...), Code: CodeMalformedRequest,
					Detail: "This member is repeated in its object."})
			} else {
				obj.keys = append(obj.keys, key)
				obj.vals[key] = v
			}
			p.path = p.path[:len(p.path)-1]
		}
		if _, err := p.dec.Token(); err != nil {
			return nil, err
		}
		end := int(p.dec.InputOffset())
		obj.raw = p.raw[start:end:end]
		return obj, nil
	}
	return tok, nil
}

// strictInputs are documents and fragments of every shape the strict
// parser meets, good and bad.
var strictInputs = []string{
	`{}`, `[]`, ` { } `, `{"a":1}`, `{"a":1,"a":2}`, `{"a":{"b":[1,{"c":true,"c":false}]},"d":null}`,
	`{"a":"\u00e9\n\"\\\/\b\f\r\t\ud83d\ude00"}`, `{"a":"\ud800"}`, "{\"a\":\"\xff\xfe\"}", "{\"\xff\":1}",
	`{"a":-0.5e+10,"b":0,"c":-0,"d":1E5,"e":12.25}`, `{"a":01}`, `{"a":1.}`, `{"a":.5}`, `{"a":-}`, `{"a":1e}`,
	`{"a":tru}`, `{"a":nul}`, `{"a":truex}`, `{"a":1,}`, `{,"a":1}`, `{"a" 1}`, `{"a":1 "b":2}`, `[1,]`, `[,1]`,
	`[1 2]`, `{"a":"x`, `{"a":"\x"}`, `{"a":"\u12"}`, "{\"a\":\"\t\"}", `{"a":1}x`, `{"a":1} {}`, `{"a":1}  `,
	`"str"`, `12`, `true`, `null`, ``, ` `, `{`, `}`, `[`, `{"a":[[[[[]]]]]}`, `{"":1,"":2}`, `{"a\u0000b":1}`,
	`{"config":{"apis":{"orders":{"identifier":"https://x","scopes":[{"value":"r","description":"d"}]}}},"prune":false}`,
	strings.Repeat("[", 70) + strings.Repeat("]", 70), strings.Repeat(`{"a":`, 63) + `1` + strings.Repeat("}", 63),
	strings.Repeat(`{"a":`, 64) + `1` + strings.Repeat("}", 64), "\ufeff{}", "{\"a\":1}\n",
}

func TestStrictParserAgreesWithTheTokenReader(t *testing.T) {
	for _, in := range strictInputs {
		agreeStrict(t, []byte(in))
	}
}

func FuzzStrictParserAgreesWithTheTokenReader(f *testing.F) {
	for _, in := range strictInputs {
		f.Add([]byte(in))
	}
	f.Fuzz(func(t *testing.T, in []byte) { agreeStrict(t, in) })
}

func agreeStrict(t *testing.T, in []byte) {
	t.Helper()
	got, gotProblems, gotOK := parseStrict(in, "/config")
	want, wantProblems, wantOK := parseStrictByTokens(in, "/config")
	if gotOK != wantOK || !reflect.DeepEqual(gotProblems, wantProblems) {
		t.Fatalf("%q: ok %v %v, want ok %v %v", in, gotOK, gotProblems, wantOK, wantProblems)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%q: parsed %#v, want %#v", in, got, want)
	}
}
