package contract

import "testing"

// TestFileIsTheTable: the descriptor File builds renders as the table
// itself, so that what the e2e tests decode with is the contract.
func TestFileIsTheTable(t *testing.T) {
	fd, err := File()
	if err != nil {
		t.Fatal(err)
	}
	if got, want := Render(fd), Normalize(Canonical); got != want {
		t.Errorf("File renders as\n%s\nwant\n%s", got, want)
	}
}
