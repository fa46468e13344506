package config

import (
	"fmt"
	"math"
	"math/big"
	"strconv"
)

// ShareOf is n under the fallback's share, rounded down exactly as the
// limiters round a maximum (from the share as written, its shortest
// decimal: the float product 0.7 * 90 is 62.99999999999999).
func ShareOf(n uint64, share float64) uint64 {
	r, ok := new(big.Rat).SetString(strconv.FormatFloat(share, 'g', -1, 64))
	if !ok {
		return uint64(math.Floor(float64(n) * share))
	}
	r.Mul(r, new(big.Rat).SetUint64(n))
	return new(big.Int).Quo(r.Num(), r.Denom()).Uint64()
}

// CheckShare refuses a reference rule whose requests_per_unit the fallback
// share rounds down to 0: in an outage every request would be denied (the
// limiters refuse the same share for an extension rule).
func CheckShare(r *Rule, share float64) *Error {
	if share == 0 || !r.Reference() {
		return nil
	}
	rpu := r.Limits[0].RequestsPerUnit
	if rpu == 0 || ShareOf(uint64(rpu), share) >= 1 {
		return nil
	}
	least := "1/" + strconv.FormatUint(uint64(rpu), 10)
	if rpu == 1 {
		least = "1"
	}
	return &Error{File: r.File, Line: r.Line, Msg: fmt.Sprintf(
		"the fallback share %v (RATELUA_FALLBACK) of requests_per_unit %d rounds down to 0, so the fallback would deny every request of an outage: the share must be at least %s", share, rpu, least)}
}
