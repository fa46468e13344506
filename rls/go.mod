module github.com/ratelua/ratelua/rls

go 1.25.0

require (
	github.com/envoyproxy/go-control-plane/envoy v1.32.2
	github.com/ratelua/ratelua v0.1.0
	github.com/redis/rueidis v1.0.79
	go.yaml.in/yaml/v3 v3.0.5
	google.golang.org/grpc v1.67.1
	google.golang.org/protobuf v1.35.2
)

require (
	github.com/cncf/xds/go v0.0.0-20240723142845-024c85f92f20 // indirect
	github.com/envoyproxy/protoc-gen-validate v1.1.0 // indirect
	github.com/planetscale/vtprotobuf v0.6.1-0.20240319094008-0393e58bdf10 // indirect
	golang.org/x/net v0.57.0 // indirect
	golang.org/x/sys v0.47.0 // indirect
	golang.org/x/text v0.41.0 // indirect
	google.golang.org/genproto/googleapis/rpc v0.0.0-20240814211410-ddb44dafa142 // indirect
)

replace github.com/ratelua/ratelua => ../
