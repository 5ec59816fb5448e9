package server

import "testing"

func TestCheckPublicURL(t *testing.T) {
	for _, tc := range []struct {
		in, want string
		ok       bool
	}{
		{"", "", true},
		{"https://ts.example", "https://ts.example", true},
		{"https://ts.example/", "https://ts.example", true},
		{"http://127.0.0.1:8080/scitt/", "http://127.0.0.1:8080/scitt", true},
		{"ts.example", "", false},
		{"/entries", "", false},
		{"ftp://ts.example", "", false},
		{"https://ts.example/?a=1", "", false},
		{"https://ts.example/#x", "", false},
		{"https://user:pw@ts.example", "", false},
		{"https://", "", false},
	} {
		got, err := CheckPublicURL(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("CheckPublicURL(%q) = %q, %v; want %q, ok=%v", tc.in, got, err, tc.want, tc.ok)
		}
	}
}
