// Package awslog routes the AWS SDK's own log lines (a credential chain
// falling back to IMDSv1, retries, deprecations) through hotkeyd's zap
// logger, at debug level, instead of the SDK's default "SDK <date> WARN"
// lines on stderr.
package awslog

import (
	"fmt"
	"strings"

	"github.com/aws/smithy-go/logging"
	"go.uber.org/zap"
)

// Logger is a logging.Logger writing to a zap logger named "aws". Set it
// on every aws.Config (config.WithLogger) so that the clients built from
// the config, and those the credential chain builds, use it.
type Logger struct{ log *zap.Logger }

var _ logging.Logger = Logger{}

// New returns a Logger writing to log.
func New(log *zap.Logger) Logger {
	if log == nil {
		log = zap.NewNop()
	}
	return Logger{log: log.Named("aws")}
}

// Logf logs one SDK line at debug level, with the SDK's own level as the
// field sdk_level (warn, debug): the SDK's warnings are about its
// fallbacks, which hotkeyd's own errors and readiness already report.
func (l Logger) Logf(c logging.Classification, format string, v ...any) {
	if ce := l.log.Check(zap.DebugLevel, ""); ce != nil {
		ce.Message = fmt.Sprintf(format, v...)
		ce.Write(zap.String("sdk_level", strings.ToLower(string(c))))
	}
}
