package zbstream

import "github.com/zbstream/zbstream/internal/version"

// Version is the version of the zbstream module, sent in the user agent
// and the x-zerobus-sdk header of every call.
const Version = version.Version
