// Package spoolcmd is "zbstream spool": check a spool directory, or move
// its damage aside (package spool says what damage is and what a repair
// costs).
package spoolcmd
