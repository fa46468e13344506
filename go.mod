module github.com/ratelua/ratelua

go 1.25.0

require (
	github.com/redis/rueidis v1.0.79
	github.com/redis/rueidis/mock v1.0.78
	github.com/yuin/gopher-lua v1.1.2
	go.uber.org/mock v0.6.0
)

require golang.org/x/sys v0.47.0 // indirect
