// Package propertytests holds zbstream's property-based tests: rapid
// state-machine tests of the protocol core against a simple model,
// differential tests against a naive reference, offset-overflow runs and
// fuzz targets. It has no non-test code.
package propertytests
