package sandbox

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"testing"
	"time"
)

// BenchmarkProxy measures what the allow-list proxy adds to a connection,
// against a direct loopback connection to the same server in the same
// iteration (interleaved, so load on the machine falls on both alike):
// the latency of a new connection and one small request (direct-p50-us,
// proxy-p50-us, latency-p50-ratio), and the throughput of a 1 MiB
// response (direct-MB/s, proxy-MB/s, throughput-ratio).
func BenchmarkProxy(b *testing.B) {
	f := newProxyFixture(b, &Proxy{Rules: testRules()})
	target := f.listedAddr
	var dLat, pLat []time.Duration
	var dTime, pTime time.Duration
	var bytes int64
	for b.Loop() {
		start := time.Now()
		roundTrip(b, target, "", "/")
		dLat = append(dLat, time.Since(start))
		start = time.Now()
		roundTrip(b, f.addr, "listed.test:80", "/")
		pLat = append(pLat, time.Since(start))

		start = time.Now()
		n := roundTrip(b, target, "", "/big")
		dTime += time.Since(start)
		start = time.Now()
		roundTrip(b, f.addr, "listed.test:80", "/big")
		pTime += time.Since(start)
		bytes += n
	}
	b.ReportMetric(percentile(dLat, 0.5)*1e3, "direct-p50-us")
	b.ReportMetric(percentile(pLat, 0.5)*1e3, "proxy-p50-us")
	b.ReportMetric(percentile(pLat, 0.5)/percentile(dLat, 0.5), "latency-p50-ratio")
	dm := float64(bytes) / dTime.Seconds() / 1e6
	pm := float64(bytes) / pTime.Seconds() / 1e6
	b.ReportMetric(dm, "direct-MB/s")
	b.ReportMetric(pm, "proxy-MB/s")
	b.ReportMetric(pm/dm, "throughput-ratio")
}

// roundTrip opens a connection to addr (through a CONNECT to tunnel when
// tunnel is set), GETs path and reads the whole body, returning its size.
func roundTrip(b *testing.B, addr, tunnel, path string) int64 {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(30 * time.Second))
	br := bufio.NewReader(c)
	if tunnel != "" {
		fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\n\r\n", tunnel)
		resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
		if err != nil || resp.StatusCode != 200 {
			b.Fatalf("CONNECT: %v %v", resp, err)
		}
	}
	fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: listed.test\r\nConnection: close\r\n\r\n", path)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		b.Fatal(err)
	}
	n, _ := io.Copy(io.Discard, resp.Body)
	return n
}
