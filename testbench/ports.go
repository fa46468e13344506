package testbench

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
)

// Ports: a node listens on P and its cluster bus on P+busOffset. P is drawn
// from [portMin, portMax], so that both P and P+busOffset lie below Linux's
// ephemeral range (32768 and up, where the kernel picks outgoing ports and
// ":0" listeners): no outgoing connection can
// hold either port, and only another bench could want the same one.
//
// Between processes (test packages run in parallel), a port is claimed with
// an advisory lock on a file in os.TempDir()/ratelua-testbench-ports, held
// until the node is closed, so that no other bench takes a port while its
// node is stopped or killed and about to restart on it. Within a process a
// set of claimed ports does the same.
const (
	portMin   = 10000
	portMax   = 32767 - busOffset
	busOffset = 10000
	// portTries is how many ports reservePort probes before giving up.
	portTries = 200
)

var (
	claimedMu sync.Mutex
	claimed   = map[int]bool{}
)

// portClaim is a reserved port; release gives it back.
type portClaim struct {
	port int
	lock *os.File // nil where file locks are not supported
	once sync.Once
}

func (p *portClaim) release() {
	p.once.Do(func() {
		if p.lock != nil {
			unlockFile(p.lock)
			p.lock.Close()
		}
		claimedMu.Lock()
		delete(claimed, p.port)
		claimedMu.Unlock()
	})
}

// reservePort claims a port P such that P and P+busOffset are free on
// 127.0.0.1 right now and no other bench holds P.
func reservePort() (*portClaim, error) {
	lockDir := filepath.Join(os.TempDir(), "ratelua-testbench-ports")
	if err := os.MkdirAll(lockDir, 0o777); err != nil {
		return nil, fmt.Errorf("testbench: port lock directory: %w", err)
	}
	os.Chmod(lockDir, 0o777|os.ModeSticky) // shared by every user's tests
	for range portTries {
		port := portMin + rand.IntN(portMax-portMin+1)
		claimedMu.Lock()
		taken := claimed[port]
		if !taken {
			claimed[port] = true
		}
		claimedMu.Unlock()
		if taken {
			continue
		}
		p := &portClaim{port: port}
		lock, err := lockFile(filepath.Join(lockDir, strconv.Itoa(port)+".lock"))
		if err != nil {
			p.release()
			continue
		}
		p.lock = lock
		if portFree(port) && portFree(port+busOffset) {
			return p, nil
		}
		p.release()
	}
	return nil, fmt.Errorf("testbench: no free port pair P, P+%d with P in [%d, %d] after %d tries", busOffset, portMin, portMax, portTries)
}

// portFree reports whether port can be listened on at 127.0.0.1.
func portFree(port int) bool {
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return false
	}
	l.Close()
	return true
}

// errLocked means another process holds the port's lock file.
var errLocked = errors.New("port locked by another process")
