package plans

import (
	"container/list"
	"sync"

	"github.com/keenauth/configplans/config"
	"github.com/keenauth/configplans/configdb"
)

// DefaultPlanCacheBytes is the most bytes of stored changes that a process
// keeps of the plans it created (KEENAUTHD_PLAN_CACHE_MIB).
const DefaultPlanCacheBytes = 16 << 20

// planCacheEntryMax is the most bytes of stored changes that one plan may
// take to be kept: the changes read with their row (configdb's
// changesWhole). A larger plan is rare, and holding it would raise the
// process's peak memory by its size.
const planCacheEntryMax = 2<<20 - 4<<10

// changesCache keeps the changes of the plans this process created, so
// that reading such a plan again (its apply above all, most often right
// after its creation) reads its row without them and does not decode them:
// for a plan of 1,000 creates, 1.2 MB read and decoded. A plan's changes
// never change once stored, but for the ids that an apply gives the
// connections it creates; a plan applied or applying is therefore always
// read whole, as is one whose stored changes are not the size kept (see
// cachedChanges.serves). Every other column of the plan is read each time.
//
// The kept changes are shared by every plan read from them: nothing
// writes to a plan's changes once it is built (an apply that gives
// connections ids clones them first, appliedRecord). The cache holds at
// most max bytes of stored changes, the least recently used dropped first.
// In memory kept changes take at most about their stored size: a create's
// spec is stored twice (its diff adds it whole) but held once, beside a
// record of some 150 bytes for each change.
type changesCache struct {
	max int64

	mu    sync.Mutex
	bytes int64
	lru   *list.List // of *cachedChanges, the most recently used first
	m     map[configdb.PlanKey]*list.Element
}

// cachedChanges are the changes of one plan, and the size of their
// stored form.
type cachedChanges struct {
	key     configdb.PlanKey
	changes []Change
	bytes   int64
}

// newChangesCache is a cache of max bytes; nil (nothing is kept) when max
// is not positive.
func newChangesCache(max int64) *changesCache {
	if max <= 0 {
		return nil
	}
	return &changesCache{max: max, lru: list.New(), m: map[configdb.PlanKey]*list.Element{}}
}

// put keeps the changes of the plan k, stored in n bytes. Changes of more
// than planCacheEntryMax bytes are not kept.
func (c *changesCache) put(k configdb.PlanKey, changes []Change, n int64) {
	if c == nil || n > planCacheEntryMax || n > c.max {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.m[k]; ok {
		c.remove(e)
	}
	c.m[k] = c.lru.PushFront(&cachedChanges{key: k, changes: changes, bytes: n})
	c.bytes += n
	for c.bytes > c.max {
		c.remove(c.lru.Back())
	}
}

// get returns the changes kept of the plan k, nil when there are none.
func (c *changesCache) get(k configdb.PlanKey) *cachedChanges {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[k]
	if !ok {
		return nil
	}
	c.lru.MoveToFront(e)
	return e.Value.(*cachedChanges)
}

// forget drops the changes of the plan k.
func (c *changesCache) forget(k configdb.PlanKey) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.m[k]; ok {
		c.remove(e)
	}
}

func (c *changesCache) remove(e *list.Element) {
	cc := c.lru.Remove(e).(*cachedChanges)
	delete(c.m, cc.key)
	c.bytes -= cc.bytes
}

// serves reports whether the kept changes are those of row, read without
// them (LoadReviewedPlanHead): a plan neither applied nor applying, whose
// stored changes have the size kept. The only rewrite of a plan's changes
// gives created connections their ids (resource_id null becomes a con_
// id), which makes them longer: a plan released to planned after such an
// apply (ReleasePlan) is told by its size.
func (cc *cachedChanges) serves(row *configdb.PlanRow) bool {
	switch Status(row.Status) {
	case StatusApplied, StatusApplying:
		return false
	}
	return row.ChangesBytes == cc.bytes
}

// cacheableChanges are the changes of a plan as planFromRow decodes them
// from their stored form, in a slice of their own.
func cacheableChanges(cs []Change) []Change {
	out := make([]Change, len(cs))
	for i, c := range cs {
		if string(c.Spec) == "null" {
			c.Spec = nil
		}
		if c.Diff == nil {
			c.Diff = []config.DiffOp{}
		}
		out[i] = c
	}
	return out
}
