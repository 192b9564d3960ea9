package configdb

import (
	"encoding/json"
	"time"
)

// Environment is a tenant environment.
type Environment struct {
	ID         string `gorm:"primaryKey"`
	Name       string
	Generation int64
	CreatedAt  time.Time
}

// APIKey is an API key of one environment; only a hash of its secret is kept.
type APIKey struct {
	EnvironmentID string `gorm:"primaryKey"`
	ID            string `gorm:"primaryKey"`
	SecretHash    []byte
	Permissions   JSON
	CreatedAt     time.Time
	RevokedAt     *time.Time
	// Owner names who the key is for (§17); nil when none was given.
	Owner *string
}

// Resource is one stored resource of a configuration.
type Resource struct {
	EnvironmentID string `gorm:"primaryKey"`
	Kind          string `gorm:"primaryKey"`
	Key           string `gorm:"primaryKey"`
	ResourceID    string
	Version       int
	Spec          JSON
	// DisplayNameKey is the folded display name of a connection or a role,
	// under which it is unique (displayname.Key); nil for other kinds. It
	// is written with the spec, so that the holders of a name are looked
	// up on an index.
	DisplayNameKey *string
	CreatedAt      time.Time
	UpdatedAt      time.Time
}

// TypeState holds the generation of one kind of an environment: the
// fingerprint of that type's whole content.
type TypeState struct {
	EnvironmentID string `gorm:"primaryKey"`
	Kind          string `gorm:"primaryKey"`
	Generation    int64
}

// PlanRow is the stored form of a plan.
type PlanRow struct {
	EnvironmentID          string `gorm:"primaryKey"`
	ID                     string `gorm:"primaryKey"`
	Status                 string
	Prune                  bool
	Types                  JSON
	TypeSet                string // typeSet(types), what the list filters on
	ReferencingTypes       JSON
	Warnings               JSON
	RequiredSecrets        JSON
	RequiresSPHost         bool `gorm:"column:requires_sp_host"`
	Summary                JSON
	Versions               JSON
	Fingerprints           JSON
	CreatedAt              time.Time
	ExpiresAt              time.Time
	AppliedAt              *time.Time
	RevisionID             *string
	CreatedBy              string
	CreatedByOwner         *string
	LeaseToken             string
	LeaseUntil             *time.Time
	AppliedBy              *string
	IdempotencyFingerprint *string
	// RebasedFrom and Moved are set on a plan made by a rebase: the source
	// plan and what had moved since it was computed.
	RebasedFrom *string
	Moved       JSON
	// Rejection is the rejection of a rejected plan (§17), nil otherwise.
	Rejection JSON
	// ChangesBytes is the size of the stored changes in bytes, a column
	// the database computes (migration 0013): planColumns reads the
	// changes with the row only up to a size. It is never written.
	ChangesBytes int64 `gorm:"->;-:migration"`
	// Changes, up to 10 MiB, is the last column of the plan's INSERT (its
	// parameters follow the fields' order): pgx appends the parameters to
	// one buffer, and one appended after a large value grows the buffer
	// again while the value is still held in the old one.
	Changes JSON
}

// TableName names the table.
func (PlanRow) TableName() string { return "config_plans" }

// PlanEventRow is an event of a plan's history.
type PlanEventRow struct {
	EnvironmentID string `gorm:"primaryKey"`
	PlanID        string `gorm:"primaryKey"`
	ID            string `gorm:"primaryKey"`
	Type          string
	CreatedAt     time.Time
	APIKeyID      string `gorm:"column:api_key_id"`
	RequestID     string
	Data          JSON
}

// TableName names the table.
func (PlanEventRow) TableName() string { return "plan_events" }

// LogRow is an entry of the management log.
type LogRow struct {
	EnvironmentID string `gorm:"primaryKey"`
	ID            string `gorm:"primaryKey"`
	Type          string
	CreatedAt     time.Time
	APIKeyID      string `gorm:"column:api_key_id"`
	RequestID     string
	PlanID        *string
	RevisionID    *string
	Data          JSON
}

// TableName names the table.
func (LogRow) TableName() string { return "management_logs" }

// TokenActivityRow is the latest token time of an application.
type TokenActivityRow struct {
	EnvironmentID  string `gorm:"primaryKey"`
	ApplicationKey string `gorm:"primaryKey"`
	LastIssuedAt   time.Time
}

// TableName names the table.
func (TokenActivityRow) TableName() string { return "token_activity" }

// PolicyRow holds the policies of an environment.
type PolicyRow struct {
	EnvironmentID string `gorm:"primaryKey"`
	Policies      JSON
	UpdatedAt     time.Time
}

// TableName names the table.
func (PolicyRow) TableName() string { return "environment_policies" }

// JSON is a JSON value stored in a jsonb column. PostgreSQL gives jsonb back
// with its own key order and spacing, so readers canonicalise before
// comparing bytes.
type JSON []byte

// Value implements driver.Valuer.
func (j JSON) Value() (any, error) {
	if j == nil {
		return "null", nil
	}
	return string(j), nil
}

// Scan implements sql.Scanner. A []byte is kept, not copied: database/sql
// passes a Scanner the driver's value, and both drivers this package opens
// make a new slice for every value they return, which nothing else holds
// (pgx's stdlib copies each json, jsonb and text value out of its read
// buffer; SQLite's driver copies each blob out of the statement). Copying
// again would hold a plan's changes, up to 10 MiB, twice while it is read.
// TestJSONScanKeepsEveryRowsValue holds both drivers to this.
func (j *JSON) Scan(src any) error {
	switch v := src.(type) {
	case nil:
		*j = nil
	case []byte:
		*j = v
	case string:
		*j = JSON(v)
	default:
		b, err := json.Marshal(v)
		if err != nil {
			return err
		}
		*j = b
	}
	return nil
}

// GormDataType tells GORM the column type.
func (JSON) GormDataType() string { return "jsonb" }
