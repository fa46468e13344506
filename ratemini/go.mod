module github.com/ratelua/ratelua/ratemini

go 1.25.0

replace github.com/ratelua/ratelua => ../

require (
	github.com/alicebob/miniredis/v2 v2.36.0
	github.com/ratelua/ratelua v0.2.0
	github.com/redis/rueidis v1.0.79
)

require (
	github.com/yuin/gopher-lua v1.1.2 // indirect
	golang.org/x/sys v0.47.0 // indirect
)
