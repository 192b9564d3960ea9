package apitest

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"net/http"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/keenauth/configplans/service"
)

// OpenAPI is the loaded and validated OpenAPI document of the API
// (service.OpenAPI) with a matcher from request paths to its path
// templates. kin-openapi's router (routers/legacy) does not match a custom
// verb that follows a parameter in one segment: it finds no operation for
// POST /v1/config-plans/x:apply and routes GET /v1/config-plans/x:apply to
// {id} = "x:apply". So the templates are matched here.
type OpenAPI struct {
	Doc       *openapi3.T
	templates []template

	compiler *jsonschema.Compiler // holds the document; guarded by mu
	mu       sync.Mutex
	bodies   map[string]*jsonschema.Schema // by location in the document
}

// template is one path of the document compiled to a regular expression.
type template struct {
	path     string
	re       *regexp.Regexp
	params   []string
	literals int // characters outside parameters: the more, the more specific
	item     *openapi3.PathItem
}

var (
	openAPIOnce sync.Once
	openAPI     *OpenAPI
	openAPIErr  error
)

// LoadOpenAPI loads service.OpenAPI once, validates it as an OpenAPI 3.1
// document whose schemas are valid JSON Schema 2020-12, and compiles its
// path templates.
func LoadOpenAPI() (*OpenAPI, error) {
	openAPIOnce.Do(func() { openAPI, openAPIErr = loadOpenAPI(service.OpenAPI) })
	return openAPI, openAPIErr
}

func loadOpenAPI(data []byte) (*OpenAPI, error) {
	doc, err := openapi3.NewLoader().LoadFromData(data)
	if err != nil {
		return nil, fmt.Errorf("load the OpenAPI document: %w", err)
	}
	if !doc.IsOpenAPI31OrLater() {
		return nil, fmt.Errorf("the OpenAPI document is version %q, not 3.1", doc.OpenAPI)
	}
	if err := doc.Validate(context.Background()); err != nil {
		return nil, fmt.Errorf("validate the OpenAPI document: %w", err)
	}
	raw, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("decode the OpenAPI document: %w", err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	if err := c.AddResource(documentURL, raw); err != nil {
		return nil, fmt.Errorf("the OpenAPI document as JSON Schema: %w", err)
	}
	o := &OpenAPI{Doc: doc, compiler: c, bodies: map[string]*jsonschema.Schema{}}
	// Every schema of the components must be valid JSON Schema 2020-12.
	for name := range doc.Components.Schemas {
		if _, err := o.bodySchema("#/components/schemas/" + pointerEscape(name)); err != nil {
			return nil, fmt.Errorf("schema %s: %w", name, err)
		}
	}
	for path, item := range doc.Paths.Map() {
		t, err := compileTemplate(path)
		if err != nil {
			return nil, err
		}
		t.item = item
		o.templates = append(o.templates, t)
	}
	// The most specific template first ({id}:apply before {id}); ties by
	// path, so that matching is deterministic.
	sort.Slice(o.templates, func(i, j int) bool {
		a, b := o.templates[i], o.templates[j]
		if a.literals != b.literals {
			return a.literals > b.literals
		}
		return a.path < b.path
	})
	return o, nil
}

var templateParam = regexp.MustCompile(`\{([^{}/]+)\}`)

// compileTemplate turns "/v1/config-plans/{id}:apply" into a regular
// expression. A parameter matches within its segment; one followed by a
// custom verb (":apply") stops at the first colon, as the server splits the
// segment there. A last parameter named path ("/console/{path}") matches
// the rest of the path, slashes included, as Gin's "*path" does.
func compileTemplate(path string) (template, error) {
	t := template{path: path}
	var re strings.Builder
	re.WriteString("^")
	last := 0
	for _, m := range templateParam.FindAllStringSubmatchIndex(path, -1) {
		lit := path[last:m[0]]
		re.WriteString(regexp.QuoteMeta(lit))
		t.literals += len(lit)
		t.params = append(t.params, path[m[2]:m[3]])
		if rest := path[m[1]:]; strings.HasPrefix(rest, ":") {
			re.WriteString(`([^/:]+)`)
		} else if rest == "" && path[m[2]:m[3]] == "path" {
			re.WriteString(`(.*)`)
		} else {
			re.WriteString(`([^/]+)`)
		}
		last = m[1]
	}
	lit := path[last:]
	re.WriteString(regexp.QuoteMeta(lit) + "$")
	t.literals += len(lit)
	compiled, err := regexp.Compile(re.String())
	if err != nil {
		return template{}, fmt.Errorf("path %s: %w", path, err)
	}
	t.re = compiled
	return t, nil
}

// Route finds the operation of a request: that of the most specific path
// template that matches the request path and has the method; nil when none
// has.
func (o *OpenAPI) Route(method, urlPath string) (*routers.Route, map[string]string) {
	for _, t := range o.templates {
		m := t.re.FindStringSubmatch(urlPath)
		if m == nil {
			continue
		}
		op := t.item.GetOperation(method)
		if op == nil {
			continue
		}
		params := map[string]string{}
		for i, name := range t.params {
			params[name] = m[i+1]
		}
		return &routers.Route{Spec: o.Doc, Path: t.path, PathItem: t.item, Method: method, Operation: op}, params
	}
	return nil, nil
}

// CheckResponse checks an answer against the document: its status must be
// one the operation documents, and its content type, headers and body must
// match that response. A request whose path or method the document does not
// have must get the documented 404 not_found, 405 method_not_allowed or (a
// server shutting down) 503 service_unavailable problem; a path that exists
// without the method may answer 404 as well as 405, since the server routes
// a custom verb's whole segment (POST /v1/config-plans/{id} is an unknown
// verb).
//
// kin-openapi checks the status and the headers. It would compile a
// response's schema again for every body it checks (tens of milliseconds
// for a plan), so bodies are checked here against the same schemas of the
// same document, compiled once.
func (o *OpenAPI) CheckResponse(req *http.Request, r *Response) error {
	var what string
	route, params := o.Route(req.Method, req.URL.Path)
	if route != nil {
		what = route.Method + " " + route.Path
	} else {
		p := req.URL.Path
		route = &routers.Route{Spec: o.Doc, Path: p, Method: req.Method, Operation: o.unroutedOperation(p == "/v1" || strings.HasPrefix(p, "/v1/"))}
		what = "no such operation: 404, 405 or 503"
	}
	fail := func(format string, args ...any) error {
		return fmt.Errorf("%s %s (%s) answered %d: %s", req.Method, req.URL.Path, what, r.Status, fmt.Sprintf(format, args...))
	}
	in := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route},
		Status:                 r.Status,
		Header:                 r.Header,
		Options:                &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true, ExcludeResponseBody: true},
	}
	in.SetBodyBytes(r.Body)
	if err := openapi3filter.ValidateResponse(context.Background(), in); err != nil {
		return fail("%v", err)
	}

	ref := route.Operation.Responses.Status(r.Status)
	if len(ref.Value.Content) == 0 {
		if len(r.Body) > 0 {
			return fail("a body the document does not describe: %s", r.Body)
		}
		return nil
	}
	ct := r.Header.Get("Content-Type")
	mt := ref.Value.Content.Get(ct)
	key := ""
	for k, v := range ref.Value.Content {
		if v == mt {
			key = k
		}
	}
	if mt == nil || key == "" {
		return fail("Content-Type %q is not one of the response's", ct)
	}
	if !strings.HasSuffix(key, "json") {
		return nil // /metrics: text
	}
	loc := ref.Ref
	if loc == "" {
		loc = "#/paths/" + pointerEscape(route.Path) + "/" + strings.ToLower(route.Method) + "/responses/" + strconv.Itoa(r.Status)
	}
	loc += "/content/" + pointerEscape(key) + "/schema"
	schema, err := o.bodySchema(loc)
	if err != nil {
		return fail("compile the schema at %s: %v", loc, err)
	}
	body, err := jsonschema.UnmarshalJSON(bytes.NewReader(r.Body))
	if err != nil {
		return fail("the body is not JSON: %v: %s", err, r.Body)
	}
	if err := schema.Validate(body); err != nil {
		return fail("the body does not match %s: %v", loc, err)
	}
	return nil
}

// documentURL is where the compiler keeps the document.
const documentURL = "file:///openapi.json"

// bodySchema compiles the schema at a location of the document ("#/…") once.
func (o *OpenAPI) bodySchema(loc string) (*jsonschema.Schema, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if s, ok := o.bodies[loc]; ok {
		return s, nil
	}
	s, err := o.compiler.Compile(documentURL + loc)
	if err != nil {
		return nil, err
	}
	o.bodies[loc] = s
	return s, nil
}

// pointerEscape escapes one reference token of a JSON pointer.
func pointerEscape(token string) string {
	return strings.NewReplacer("~", "~0", "/", "~1").Replace(token)
}

// unroutedOperation is what the answers to paths and methods that the
// document does not have are checked against. Outside /v1 only Request-Id is
// promised, not Cache-Control.
func (o *OpenAPI) unroutedOperation(v1 bool) *openapi3.Operation {
	responses := openapi3.NewResponses()
	responses.Delete("default")
	for status, name := range map[int]string{http.StatusNotFound: "NotFound", http.StatusMethodNotAllowed: "MethodNotAllowed",
		http.StatusServiceUnavailable: "Unavailable"} {
		resp := *o.Doc.Components.Responses[name].Value
		if !v1 {
			resp.Headers = maps.Clone(resp.Headers)
			delete(resp.Headers, "Cache-Control")
		}
		responses.Set(strconv.Itoa(status), &openapi3.ResponseRef{Ref: "#/components/responses/" + name, Value: &resp})
	}
	return &openapi3.Operation{Responses: responses}
}

// ValidateResponse fails t when an answer does not match the OpenAPI
// document (status, content type, headers, body).
func ValidateResponse(t testing.TB, req *http.Request, r *Response) {
	t.Helper()
	o, err := LoadOpenAPI()
	if err != nil {
		t.Errorf("OpenAPI document: %v", err)
		return
	}
	if err := o.CheckResponse(req, r); err != nil {
		t.Errorf("OpenAPI contract: %v", err)
	}
}
