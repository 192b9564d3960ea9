package guardrails

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/keenauth/configplans/config"
)

// benchRules are 50 warn rules, none of which catches the changes of the
// benchmark, 27 of them about apis: a harder case than test/bench's P11
// (6 about apis), where every change is evaluated against 27 rules.
func benchRules(n int) []config.Rule {
	kinds := []string{"environment_settings", "identity_settings", "attack_protection", "branding", "connection", "role", "application", "application_branding"}
	whens := []string{
		"change.kind == 'api' && new.token_lifetime_seconds > 86400",
		"change.kind == 'api' && change.action == 'delete' && old.display_name.startsWith('Prod')",
		"change.kind == 'api' && new.scopes.exists(s, s.value.startsWith('admin:'))",
		"change.kind == 'api' && !new.identifier.startsWith('https://')",
		"change.kind == 'api' && old != null && new != null && new.token_lifetime_seconds > old.token_lifetime_seconds * 2",
		"change.kind == 'api' && size(new.scopes) > 100",
		"change.kind == 'api' && new.display_name.contains('TEMP')",
		"environment.name == 'production' && change.action == 'delete'",
	}
	out := make([]config.Rule, n)
	for i := range out {
		when := whens[i%len(whens)]
		if i >= len(whens) && i%2 == 1 {
			when = fmt.Sprintf("change.kind == '%s' && change.key.startsWith('k%d')", kinds[i%len(kinds)], i)
		}
		out[i] = rule(fmt.Sprintf("rule-%02d", i), when)
		warn := config.EnforceWarn
		out[i].Enforcement = &warn
	}
	return out
}

func BenchmarkEval1000Changes50Rules(b *testing.B) {
	set, err := Programs(benchRules(50))
	if err != nil {
		b.Fatal(err)
	}
	changes := make([]Change, 1000)
	for i := range changes {
		var scopes []string
		for j := range 4 {
			scopes = append(scopes, fmt.Sprintf(`{"description":%q,"value":"items-%02d:read"}`, strings.Repeat("x", 100), j))
		}
		spec := fmt.Sprintf(`{"display_name":"Bench API %d","identifier":"https://api.bench.example/r-%05d","scopes":[%s],"token_lifetime_seconds":3600}`,
			i, i, strings.Join(scopes, ","))
		changes[i] = Change{Kind: "api", Key: fmt.Sprintf("r-%05d", i), Action: "create", New: json.RawMessage(spec)}
	}
	b.ResetTimer()
	for b.Loop() {
		ev := set.Evaluator(Environment{ID: "env_1", Name: "bench"})
		for _, c := range changes {
			if got := ev.Eval(c); len(got) != 0 {
				b.Fatalf("caught: %+v", got[0])
			}
		}
	}
}
