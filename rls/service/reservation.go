package service

import (
	"context"
	"strconv"

	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/protobuf/types/known/structpb"
)

// reserveOrSettle runs a reserve or a settle job on its rule's limiter:
// a reserve of the job's hits, decided as those hits are, whose id the
// job keeps when the server holds it; a settle of reservation j.id with
// the job's hits as the actual cost, at most once, whose answer is a peek
// after it (one the server did not hold, expired or settled before,
// writes nothing).
func (j *job) reserveOrSettle(ctx context.Context) {
	switch j.op {
	case opReserve:
		r, err := j.d.limiter.Reserve(ctx, j.key, int64(min(j.n, chargeMax)))
		j.out = r.Result()
		switch {
		case err != nil && !j.out.Allowed:
			j.err = err
		case err != nil:
			j.open = true
		}
		j.id = 0
		if r.Held() {
			j.id = r.ID()
		}
	case opSettle:
		out, _, err := j.d.limiter.SettleID(ctx, j.key, j.id, int64(min(j.n, chargeMax)))
		if err != nil {
			j.err = err
			return
		}
		j.out = out
	}
}

// withReservations adds to resp's dynamic_metadata the id of each
// reservation held, as a string under the field its reserve named.
func withReservations(resp *pb.RateLimitResponse, jobs []*job) *pb.RateLimitResponse {
	for _, j := range jobs {
		if j.op != opReserve || j.id == 0 {
			continue
		}
		if resp.DynamicMetadata == nil {
			resp.DynamicMetadata = &structpb.Struct{Fields: map[string]*structpb.Value{}}
		}
		resp.DynamicMetadata.Fields[j.name] = structpb.NewStringValue(strconv.FormatInt(j.id, 10))
	}
	return resp
}
