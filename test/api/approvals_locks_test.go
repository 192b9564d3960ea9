package api_test

import (
	"context"
	"database/sql"
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/keenauth/configplans/config"
	"github.com/keenauth/configplans/configdb"
	"github.com/keenauth/configplans/test/apitest"
)

// awaitLockWait waits until a statement of the test's database waits for a
// lock (pg_stat_activity) and its text holds what, and fails t if the
// request done answers first (it did not wait) or nothing waits within 20 s.
func awaitLockWait(t *testing.T, e *apitest.Env, what string, done <-chan *apitest.Response) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		var n int64
		err := e.GormDB().Raw(`SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()
			AND wait_event_type = 'Lock' AND strpos(query, ?) > 0`, what).Row().Scan(&n)
		if err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			return
		}
		select {
		case r := <-done:
			t.Fatalf("the apply answered without waiting for the lock (%s): %d %s", what, r.Status, r.Body)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("no statement waits for a lock with %q", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestApplyWaitsForAReviewHoldingThePlan (§17, §6 row 9): on PostgreSQL a
// review holds the plan's row for its statement, as an apply's claim does.
// An apply arriving meanwhile waits for the review, then answers as the
// review left the plan: applied after an approval, 409 with plan_status
// rejected after a rejection; never 409 applying for a review that ends
// within the apply's wait (2 s; one that outlasts it is answered as busy,
// and the plan stays planned for the next apply). The review's lock is
// held open by a transaction of the test (LockPlanForReview, what :approve
// and :reject run first), so the race is the same every run.
func TestApplyWaitsForAReviewHoldingThePlan(t *testing.T) {
	t.Parallel()
	if apitest.Backend() == apitest.BackendEmbedded {
		t.Skip("SQLite has no row locks: a review and an apply take turns as the one writer")
	}
	e := apitest.Setup(t, apitest.Options{})
	putApprovalPolicy(t, e, 1)
	creator := e.Key(config.AllPermissions()...)
	approverID, approver := ownedKey(t, e, "bob@shop.example", config.PermConfigApprove, "apis:read")
	db := configdb.New(e.GormDB(), e.Clock.Now, configdb.Options{})

	for _, tc := range []struct {
		name   string
		reject bool
		// stuck: the review holds the plan until the apply has answered.
		stuck bool
		// status and code of the apply's answer, and the plan's status after it.
		status     int
		code, plan string
	}{
		{name: "approval", status: http.StatusOK, plan: "applied"},
		{name: "rejection", reject: true, status: http.StatusConflict, code: "config_plan_not_applicable", plan: "rejected"},
		// The wait is bounded: a review that outlasts it is answered as a
		// plan being applied, and the plan is applied by a later apply.
		{name: "stuck", stuck: true, status: http.StatusConflict, code: "config_plan_not_applicable", plan: "applying"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id := createPlanAs(t, e, creator, apiDoc("held-"+tc.name, 60))
			if r := review(e, approver, id, "approve", nil); r.Status != http.StatusOK {
				t.Fatalf("approve: %d %s", r.Status, r.Body)
			}
			locked, release, held := make(chan error, 1), make(chan struct{}), make(chan error, 1)
			go func() {
				held <- db.InTx(context.Background(), sql.LevelRepeatableRead, func(tx *configdb.Tx) error {
					_, err := tx.LockPlanForReview(context.Background(), configdb.PlanKey{EnvironmentID: e.EnvID, ID: id})
					locked <- err
					<-release
					if err != nil || !tc.reject {
						return err
					}
					return tx.RejectPlan(context.Background(), configdb.PlanKey{EnvironmentID: e.EnvID, ID: id},
						configdb.JSON(`{"api_key_id":"`+approverID+`","owner":"bob@shop.example","rejected_at":"2026-12-05T00:00:00Z","comment":"held"}`))
				})
			}()
			if err := <-locked; err != nil {
				t.Fatal(err)
			}
			done := make(chan *apitest.Response, 1)
			start := time.Now()
			go func() {
				done <- e.Do(apitest.Request{Method: "POST", Path: "/v1/config-plans/" + id + ":apply", Secret: creator})
			}()
			awaitLockWait(t, e, "pg_advisory_xact_lock", done)
			var r *apitest.Response
			if tc.stuck {
				r = <-done
				if waited := time.Since(start); waited < 2*time.Second {
					t.Errorf("the apply answered after %v, before its wait for the review was over", waited)
				}
			}
			close(release)
			if err := <-held; err != nil {
				t.Fatal(err)
			}
			if !tc.stuck {
				r = <-done
			}
			if r.Status != tc.status || (tc.code != "" && (r.Code() != tc.code || r.JSON()["plan_status"] != tc.plan)) {
				t.Fatalf("apply after the %s: %d %s", tc.name, r.Status, r.Body)
			}
			want := tc.plan
			if tc.stuck {
				if r := e.Do(apitest.Request{Method: "POST", Path: "/v1/config-plans/" + id + ":apply", Secret: creator}); r.Status != http.StatusOK {
					t.Fatalf("apply once the review ended: %d %s", r.Status, r.Body)
				}
				want = "applied"
			}
			if got := e.Do(apitest.Request{Method: "GET", Path: "/v1/config-plans/" + id}).JSON()["status"]; got != want {
				t.Errorf("the plan is %v, want %s", got, want)
			}
		})
	}
}

// TestApprovalsRaisedBeforeTheApplysTransactionAreObeyed (§17): the apply
// counts approvals first from the plan as loaded, then again inside its
// transaction under the plan's lock, against the policy read there. The
// test holds the environment's row (as another apply of the environment
// does) so that the apply, past its first count (one approval of one
// required), waits inside its transaction; required_approvals is raised to
// 2 meanwhile. The transaction, run again once the row is free, reads the
// raised policy and refuses the apply: 409 approval_required with 2
// required and 1 received, apply_rejected in the plan's history (only a
// refusal of the transaction records it), nothing written.
func TestApprovalsRaisedBeforeTheApplysTransactionAreObeyed(t *testing.T) {
	t.Parallel()
	if apitest.Backend() == apitest.BackendEmbedded {
		t.Skip("SQLite has no row locks to hold an apply inside its transaction")
	}
	e := apitest.Setup(t, apitest.Options{})
	putApprovalPolicy(t, e, 1)
	creator := e.Key(config.AllPermissions()...)
	_, approver := ownedKey(t, e, "bob@shop.example", config.PermConfigApprove, "apis:read")
	id := createPlanAs(t, e, creator, apiDoc("orders", 60))
	if r := review(e, approver, id, "approve", nil); r.Status != http.StatusOK {
		t.Fatalf("approve: %d %s", r.Status, r.Body)
	}
	before, _ := e.Export()

	holder := e.GormDB().Begin()
	defer holder.Rollback()
	if err := holder.Exec(`UPDATE environments SET id = id WHERE id = ?`, e.EnvID).Error; err != nil {
		t.Fatal(err)
	}
	done := make(chan *apitest.Response, 1)
	go func() {
		done <- e.Do(apitest.Request{Method: "POST", Path: "/v1/config-plans/" + id + ":apply", Secret: creator})
	}()
	awaitLockWait(t, e, `FROM "environments" WHERE id =`, done)
	putApprovalPolicy(t, e, 2)
	if err := holder.Commit().Error; err != nil {
		t.Fatal(err)
	}

	r := <-done
	if r.Status != http.StatusConflict || r.Code() != "approval_required" ||
		r.JSON()["approvals_required"] != float64(2) || r.JSON()["approvals_received"] != float64(1) {
		t.Fatalf("apply after required_approvals was raised: %d %s", r.Status, r.Body)
	}
	got := e.Do(apitest.Request{Method: "GET", Path: "/v1/config-plans/" + id}).JSON()
	if got["status"] != "planned" {
		t.Errorf("the plan is %v", got["status"])
	}
	var evs struct{ Data []struct{ Type string } }
	e.Do(apitest.Request{Method: "GET", Path: "/v1/config-plans/" + id + "/events"}).Decode(t, &evs)
	types := make([]string, len(evs.Data))
	for i, ev := range evs.Data {
		types[i] = ev.Type
	}
	if !slices.Contains(types, "apply_rejected") || slices.Contains(types, "apply_succeeded") {
		t.Errorf("events %v: the refusal was not the transaction's", types)
	}
	if after, _ := e.Export(); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Error("the configuration changed")
	}
}
