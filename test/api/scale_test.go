package api_test

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/keenauth/configplans/plans"
	"github.com/keenauth/configplans/ratelimit"
	"github.com/keenauth/configplans/test/apitest"
	"github.com/keenauth/configplans/test/testdb"
)

// answerCheck collects the answers of a workload and refuses any 5xx
// but a 503 with Retry-After.
type answerCheck struct {
	mu       sync.Mutex
	t        *testing.T
	statuses map[int]int
}

func (a *answerCheck) see(what string, r *apitest.Response) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.statuses[r.Status]++
	if r.Status >= 500 && (r.Status != http.StatusServiceUnavailable || r.Header.Get("Retry-After") == "") {
		a.t.Errorf("%s: %d %s (Retry-After %q); the only 5xx allowed is 503 with Retry-After", what, r.Status, r.Body, r.Header.Get("Retry-After"))
	}
}

// assertEachPlanAppliedOnce checks the database after a workload: every
// applied plan has one revision, one config.applied entry and one
// apply_succeeded event, and no other plan has any.
func assertEachPlanAppliedOnce(t *testing.T, k *applyEnv) (applied int) {
	t.Helper()
	var rows []struct {
		ID, Status                    string
		Revisions, Applied, Succeeded int
	}
	err := k.e.DB.DB.Raw(`SELECT p.id, p.status,
		(SELECT count(*) FROM config_revisions r WHERE r.environment_id = p.environment_id AND r.plan_id = p.id) AS revisions,
		(SELECT count(*) FROM management_logs l WHERE l.environment_id = p.environment_id AND l.plan_id = p.id AND l.type = 'config.applied') AS applied,
		(SELECT count(*) FROM plan_events e WHERE e.environment_id = p.environment_id AND e.plan_id = p.id AND e.type = 'apply_succeeded') AS succeeded
		FROM config_plans p`).Scan(&rows).Error
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		want := 0
		if r.Status == "applied" {
			want, applied = 1, applied+1
		}
		if r.Revisions != want || r.Applied != want || r.Succeeded != want {
			t.Errorf("plan %s (%s): %d revisions, %d config.applied, %d apply_succeeded; want %d each", r.ID, r.Status, r.Revisions, r.Applied, r.Succeeded, want)
		}
	}
	return applied
}

// TestThreeReplicasMixedWorkload: three instances over one database and
// one Redis run a bounded mixed workload (plans of every type applied
// concurrently from every replica, retries with the same Idempotency-Key
// on another replica, reads); afterwards each plan was applied at most
// once, and every applied plan has one revision and one config.applied.
func TestThreeReplicasMixedWorkload(t *testing.T) {
	t.Parallel()
	k := newApplyEnv(t, apitest.Options{})
	k.e.RequirePostgres()
	replicas := []*apitest.Env{k.e, apitest.Setup(t, apitest.Options{Replica: k.e}), apitest.Setup(t, apitest.Options{Replica: k.e})}
	docs := oneDocPerType()
	ids := make([]string, len(docs))
	for i, d := range docs {
		ids[i] = k.planID(d, false)
	}
	check := &answerCheck{t: t, statuses: map[int]int{}}
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i, id := range ids {
		for j := range 6 { // 6 applies of each plan, two per replica; each retried once with its key
			e := replicas[j%3]
			retry := replicas[(j+1)%3]
			key := fmt.Sprintf("apply-%d-%d", i, j)
			wg.Go(func() {
				<-start
				path := "/v1/config-plans/" + id + ":apply"
				first := e.Do(apitest.Request{Method: "POST", Path: path, Header: map[string]string{"Idempotency-Key": key}})
				check.see("apply", first)
				again := retry.Do(apitest.Request{Method: "POST", Path: path, Header: map[string]string{"Idempotency-Key": key}})
				check.see("retry", again)
				if first.Status == http.StatusOK && (again.Status != http.StatusOK || again.Header.Get("Idempotent-Replayed") != "true") {
					t.Errorf("retry of a 200 on another replica: %d (replayed %q), want the 200 replayed", again.Status, again.Header.Get("Idempotent-Replayed"))
				}
				check.see("read", retry.Do(apitest.Request{Method: "GET", Path: "/v1/config-plans/" + id}))
			})
		}
		wg.Go(func() {
			<-start
			r := replicas[i%3].Do(apitest.Request{Method: "POST", Path: "/v1/config-plans", Body: map[string]any{"config": k.doc(envSettings(fmt.Sprintf("Extra %d", i)))}})
			check.see("plan", r)
		})
	}
	close(start)
	wg.Wait()
	for _, id := range ids {
		if s := k.planStatus(id); s != "applied" {
			t.Errorf("plan %s is %s after its applies, want applied", id, s)
		}
	}
	if n := assertEachPlanAppliedOnce(t, k); n != len(ids) {
		t.Errorf("%d plans applied, want %d", n, len(ids))
	}
}

// TestRedisClusterReshardAndFailover runs plans and applies with
// Idempotency-Key over a Redis Cluster (several environments, so that
// their keys live on every master) while slots are resharded and then a
// master is killed: no 5xx but a 503 with Retry-After, no rate limit fails
// open while the cluster is healthy (the reshard included), and no plan
// is applied twice.
func TestRedisClusterReshardAndFailover(t *testing.T) {
	t.Parallel()
	if apitest.Embedded() {
		t.Skip("needs PostgreSQL/Redis: a Redis Cluster")
	}
	cluster := testdb.StartRedisCluster(t)
	rdb, prefix := cluster.ClientPrefix(t)
	// Decisions, not latency: a busy machine must not turn slow calls into
	// fail-opens (which this test counts).
	rl := ratelimit.Config{Quota: 100000, Inflight: 1000, CallTimeout: 3 * time.Second}
	// Every applied plan keeps its revision: the workload runs for as long as
	// the reshard and the failover take, and a fast apply may pass the 50
	// revisions an environment keeps by default.
	pc := plans.DefaultConfig()
	pc.RevisionLimit = 100_000
	first := newApplyEnv(t, apitest.Options{Cluster: rdb, Prefix: prefix, RateLimit: rl, Plans: pc})
	envs := []*apitest.Env{first.e}
	for range 5 {
		envs = append(envs, apitest.Setup(t, apitest.Options{Database: first.e.DB, Cluster: rdb, Prefix: prefix, RateLimit: rl, Plans: pc}))
	}
	check := &answerCheck{t: t, statuses: map[int]int{}}
	var (
		stop    atomic.Bool
		wg      sync.WaitGroup
		rounds  atomic.Int64
		applied atomic.Int64
	)
	for w, e := range envs {
		wg.Go(func() {
			for i := 0; !stop.Load(); i++ {
				key := fmt.Sprintf("w%d-%d", w, i)
				doc := map[string]any{"config": map[string]any{"environment_settings": map[string]any{
					"display_name": fmt.Sprintf("Shop %d %d", w, i), "default_locale": "en", "session_lifetime_hours": 168}}}
				p := e.Do(apitest.Request{Method: "POST", Path: "/v1/config-plans", Body: doc, Header: map[string]string{"Idempotency-Key": key + "-plan"}})
				check.see("plan", p)
				if p.Status != http.StatusCreated {
					continue
				}
				path := "/v1/config-plans/" + p.JSON()["id"].(string) + ":apply"
				for range 2 { // the apply and its retry with the same key
					r := e.Do(apitest.Request{Method: "POST", Path: path, Header: map[string]string{"Idempotency-Key": key + "-apply"}})
					check.see("apply", r)
					if r.Status == http.StatusOK && r.Header.Get("Idempotent-Replayed") != "true" {
						applied.Add(1)
					}
				}
				rounds.Add(1)
			}
		})
	}
	t.Cleanup(func() { stop.Store(true); wg.Wait() })
	waitRounds := func(n int64) {
		t.Helper()
		testdb.WaitFor(t, 2*time.Minute, fmt.Sprintf("%d more rounds of the workload", n), func() error {
			if r := rounds.Load(); r < n {
				return fmt.Errorf("%d rounds", r)
			}
			return nil
		})
	}
	waitRounds(12)
	masters := cluster.Masters(t)
	cluster.Reshard(t, masters[0], masters[1], 1500)
	waitRounds(rounds.Load() + 12)
	failOpens := strings.Count(first.e.Logs.String(), "failed open")
	for _, e := range envs[1:] {
		failOpens += strings.Count(e.Logs.String(), "failed open")
	}
	if failOpens != 0 {
		t.Errorf("%d rate-limit fail-opens while the cluster was healthy (a reshard included), want none", failOpens)
	}

	cluster.KillMaster(t, cluster.Masters(t)[0])
	waitRounds(rounds.Load() + 12)
	stop.Store(true)
	wg.Wait()

	t.Logf("%d rounds; answers by status: %v", rounds.Load(), check.statuses)
	if got := int64(assertEachPlanAppliedOnce(t, first)); got != applied.Load() {
		t.Errorf("%d plans applied in the database, %d first answers 200; want them equal", got, applied.Load())
	}
}
