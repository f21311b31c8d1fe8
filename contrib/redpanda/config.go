package zbredpanda

import (
	"fmt"

	"github.com/redpanda-data/benthos/v4/public/service"
)

// Field names of the zerobus output's configuration.
const (
	fieldEndpoint     = "endpoint"
	fieldTable        = "table"
	fieldToken        = "token"
	fieldOAuth        = "oauth"
	fieldWorkspaceURL = "workspace_url"
	fieldClientID     = "client_id"
	fieldClientSecret = "client_secret"
	fieldRecordType   = "record_type"
	fieldProto        = "proto"
	fieldDescriptors  = "descriptor_set_file"
	fieldMessage      = "message"
	fieldPersistent   = "persistent"
	fieldBatching     = "batching"
)

// Spec is the zerobus output's configuration specification.
func Spec() *service.ConfigSpec {
	return service.NewConfigSpec().
		Summary("Writes messages into Zerobus tables (Databricks) over gRPC, acknowledging each batch once it is durable.").
		Description("Every message is one record: a JSON object, or a serialized protobuf message of the configured type. "+
			"A batch is acknowledged only once all its records are durable on the server. A record the server would refuse, "+
			"or one larger than a call may be, fails alone: route it to a dead letter with a `fallback` or `switch` output.").
		Fields(
			service.NewStringField(fieldEndpoint).Description("The Zerobus endpoint: `https://<workspace-id>.zerobus.<region>.cloud.databricks.com`, or `http://host:port` for a plaintext server (zbstream serve)."),
			service.NewInterpolatedStringField(fieldTable).Description("The table, `catalog.schema.table`; may be interpolated per message.").Example("main.sales.orders").Example(`${! meta("table") }`),
			service.NewStringField(fieldToken).Description("A static bearer token. Give either this or oauth.").Secret().Optional(),
			service.NewObjectField(fieldOAuth,
				service.NewStringField(fieldWorkspaceURL).Description("The workspace URL, whose /oidc/v1/token issues tokens."),
				service.NewStringField(fieldClientID).Description("The service principal's client id."),
				service.NewStringField(fieldClientSecret).Description("The service principal's secret.").Secret(),
			).Description("OAuth client credentials of a service principal, as the official SDKs use them.").Optional(),
			service.NewStringEnumField(fieldRecordType, "json", "proto").Description("The type of every record.").Default("json"),
			service.NewObjectField(fieldProto,
				service.NewStringField(fieldDescriptors).Description("A FileDescriptorSet (protoc --include_imports --descriptor_set_out) holding the message."),
				service.NewStringField(fieldMessage).Description("The message's full name, as `pkg.Order`."),
			).Description("The message type of proto records.").Optional(),
			service.NewBoolField(fieldPersistent).Description("Use persistent streams: a reconnect resumes the stream and resends only what the server lacks, so a record is not written twice by this process's reconnects. Otherwise ephemeral streams, the official at-least-once contract.").Default(false).Advanced(),
			service.NewOutputMaxInFlightField(),
			service.NewBatchPolicyField(fieldBatching),
		)
}

// config is the zerobus output's parsed configuration.
type config struct {
	endpoint                       string
	table                          *service.InterpolatedString
	token                          string
	workspaceURL, clientID, secret string
	proto                          bool
	descriptorFile, message        string
	persistent                     bool
}

func parseConfig(pc *service.ParsedConfig) (config, error) {
	var c config
	var err error
	str := func(dst *string, path ...string) {
		if err == nil {
			*dst, err = pc.FieldString(path...)
		}
	}
	str(&c.endpoint, fieldEndpoint)
	if err == nil {
		c.table, err = pc.FieldInterpolatedString(fieldTable)
	}
	if pc.Contains(fieldToken) {
		str(&c.token, fieldToken)
	}
	if pc.Contains(fieldOAuth) {
		str(&c.workspaceURL, fieldOAuth, fieldWorkspaceURL)
		str(&c.clientID, fieldOAuth, fieldClientID)
		str(&c.secret, fieldOAuth, fieldClientSecret)
	}
	var rt string
	str(&rt, fieldRecordType)
	c.proto = rt == "proto"
	if c.proto && !pc.Contains(fieldProto) {
		return c, fmt.Errorf("record_type proto needs the proto field (descriptor_set_file and message)")
	}
	if c.proto {
		str(&c.descriptorFile, fieldProto, fieldDescriptors)
		str(&c.message, fieldProto, fieldMessage)
	}
	if err == nil {
		c.persistent, err = pc.FieldBool(fieldPersistent)
	}
	if err == nil && (c.token == "") == (c.clientID == "") {
		err = fmt.Errorf("give exactly one of token and oauth")
	}
	return c, err
}
