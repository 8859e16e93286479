package traffic

import "time"

// DynamoDBLaunch is when DynamoDB opened, in January 2012: an access
// logged before it is a time that makes no sense (a zero time, a clock
// reset to 1970), refused as ReasonBadTime.
var DynamoDBLaunch = time.Date(2012, 1, 1, 0, 0, 0, 0, time.UTC)
