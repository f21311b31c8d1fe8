// Package io runs a zbstream protocol core (package core) over a pluggable
// transport. It is imported as streamio where the standard io is also
// needed.
package io
