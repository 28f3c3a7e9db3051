"""Test hosts on a private network made of Linux network namespaces (needs root).

A `Network` is a few segments (bridges) in a namespace of their own (the switch: its own,
empty firewall, whatever the machine's forwarding rules say), one namespace per `Host`,
joined to the segments it is on by veth pairs, and one more port per segment for the test
process itself, so the test can reach every host. Segment i's addresses are
10.(213+i).N.0/24 (N from the test's pid), a range that exists only on these links; a host
has the same last byte on each. `Host.cut(segment)` takes the host's link to that segment
down (a partition: it reaches no one there, no one there reaches it), `Host.mend()` brings
it back; `Host.drop(address, port)` silently drops its packets to and from one service
(its firewall, in its namespace), `Host.undrop()` lets them through again.

`Network.close()` stops every process started on a host (politely, then SIGKILL, then
whatever is left in its namespace) and deletes every namespace and link, however the test
ended: use `with Network() as network:`.
"""
import os
import signal
import subprocess
from pathlib import Path

from tests.servers import terminate

SUBNET = "10.213.{}"


def ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, timeout=30)


def namespaces_available() -> str | None:
    """None if this process can make network namespaces, else why not."""
    if os.geteuid() != 0:
        return "network namespaces need root"
    probe = f"gwprobe{os.getpid()}"
    try:
        ip("netns", "add", probe)
        ip("netns", "del", probe)
    except (OSError, subprocess.SubprocessError) as exc:
        return f"cannot make a network namespace: {exc}"
    return None


class Host:
    """One host: a network namespace with a link per segment, and the processes started on
    it."""

    def __init__(self, network: "Network", name: str, index: int, segments: tuple[str, ...]):
        self.network, self.name, self.index = network, name, index
        self.namespace = f"{network.tag}-{name}"
        self.segments = segments
        self.processes: list[subprocess.Popen] = []
        self.stop_signals: dict[subprocess.Popen, int] = {}

    def address(self, segment: str) -> str:
        assert segment in self.segments, f"{self.name} is not on {segment}"
        return self.network.address(segment, self.index)

    def port(self, segment: str) -> str:
        """Its link's end on the switch."""
        return f"{self.network.tag}{self.network.segments.index(segment)}p{self.index}"

    def popen(self, args: list[str], *, log: Path, env: dict | None = None,
              user: str | None = None, cwd: Path | None = None,
              stop_signal: int = signal.SIGTERM) -> subprocess.Popen:
        """Start `args` on this host (as `user`, if given), output to `log`. `ip netns exec`
        and `setpriv` exec it: the process's pid is the command's. `stop` sends it
        `stop_signal` (PostgreSQL: SIGINT, its fast shutdown; its SIGTERM waits for every
        client to leave, 15 s of a test's teardown)."""
        command = ["ip", "netns", "exec", self.namespace]
        if user is not None:
            command += ["setpriv", f"--reuid={user}", f"--regid={user}", "--init-groups"]
        process = subprocess.Popen(command + args, env=env, cwd=cwd, stdout=log.open("w"),
                                   stderr=subprocess.STDOUT)
        self.processes.append(process)
        self.stop_signals[process] = stop_signal
        return process

    def cut(self, segment: str) -> None:
        """Take this host's link to `segment` down: partitioned from every host there."""
        ip("-n", self.network.switch, "link", "set", self.port(segment), "down")

    def mend(self, segment: str) -> None:
        ip("-n", self.network.switch, "link", "set", self.port(segment), "up")

    def drop(self, address: str, port: int) -> None:
        """Drop every packet between this host and the service at `address:port`, both
        ways, silently: a partition of that one service (nothing refused, nothing answers;
        the host's other links stay up)."""
        for rule in self._drop_rules(address, port):
            ip("netns", "exec", self.namespace, "iptables", "-A", *rule)

    def undrop(self, address: str, port: int) -> None:
        for rule in self._drop_rules(address, port):
            ip("netns", "exec", self.namespace, "iptables", "-D", *rule)

    def connections_to(self, address: str, port: int) -> int:
        """How many TCP connections to `address:port` this host's kernel holds established
        (one it has given up on, its keepalive probes or data unanswered, is not)."""
        listed = subprocess.run(
            ["ip", "netns", "exec", self.namespace, "ss", "-Htn", "state", "established",
             "dst", f"{address}:{port}"], check=True, capture_output=True, text=True, timeout=30)
        return len(listed.stdout.splitlines())

    @staticmethod
    def _drop_rules(address: str, port: int) -> list[list[str]]:
        return [["OUTPUT", "-p", "tcp", "-d", address, "--dport", str(port), "-j", "DROP"],
                ["INPUT", "-p", "tcp", "-s", address, "--sport", str(port), "-j", "DROP"]]

    def stop(self) -> None:
        """Stop this host's processes: their stop signal, SIGKILL after 15 s, then anything
        left."""
        for process in self.processes:
            if process.poll() is None:
                process.send_signal(self.stop_signals[process])
        for process in self.processes:
            terminate(process)
        left = subprocess.run(["ip", "netns", "pids", self.namespace], capture_output=True,
                              text=True, timeout=30).stdout.split()
        for pid in left:  # children of what was started (PostgreSQL's backends)
            try:
                os.kill(int(pid), signal.SIGKILL)
            except ProcessLookupError:
                pass


class Network:
    def __init__(self, segments: tuple[str, ...] = ("lan",)):
        self.tag = f"gwt{os.getpid() % 100000}"
        self.subnet_byte = 1 + os.getpid() % 250
        self.segments = segments
        self.switch = f"{self.tag}-switch"
        self.hosts: list[Host] = []

    def address(self, segment: str, index: int) -> str:
        """The address of host `index` on `segment` (1: the test process)."""
        return f"10.{213 + self.segments.index(segment)}.{self.subnet_byte}.{index}"

    def test_port(self, segment: str) -> str:
        return f"{self.tag}{self.segments.index(segment)}t"

    def __enter__(self) -> "Network":
        try:
            ip("netns", "add", self.switch)
            ip("-n", self.switch, "link", "set", "lo", "up")
            for number, segment in enumerate(self.segments):
                bridge = f"br{number}"
                ip("-n", self.switch, "link", "add", bridge, "type", "bridge")
                ip("-n", self.switch, "link", "set", bridge, "up")
                self._link(self.test_port(segment), bridge, None, self.address(segment, 1))
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def host(self, name: str, segments: tuple[str, ...] | None = None) -> Host:
        """A new host on `segments` (default: all), at .2, .3, … in order."""
        host = Host(self, name, len(self.hosts) + 2, segments or self.segments)
        self.hosts.append(host)
        ip("netns", "add", host.namespace)
        ip("-n", host.namespace, "link", "set", "lo", "up")
        for segment in host.segments:
            self._link(host.port(segment), f"br{self.segments.index(segment)}",
                       host.namespace, host.address(segment))
        return host

    def _link(self, port: str, bridge: str, namespace: str | None, address: str) -> None:
        """A veth pair: `port` on `bridge`, its peer with `address` in `namespace` (None:
        the test process's namespace)."""
        peer = port + "x"
        ip("link", "add", peer, "type", "veth", "peer", "name", port, "netns", self.switch)
        ip("-n", self.switch, "link", "set", port, "master", bridge)
        ip("-n", self.switch, "link", "set", port, "up")
        inside = ["-n", namespace] if namespace else []
        if namespace:
            ip("link", "set", peer, "netns", namespace)
        ip(*inside, "addr", "add", f"{address}/24", "dev", peer)
        ip(*inside, "link", "set", peer, "up")

    def close(self) -> None:
        """Stop every host's processes, delete every namespace and link."""
        for host in reversed(self.hosts):
            try:
                host.stop()
            finally:
                subprocess.run(["ip", "netns", "del", host.namespace], capture_output=True,
                               timeout=30)
        for segment in self.segments:  # deleting the switch would too; say it plainly
            subprocess.run(["ip", "link", "del", self.test_port(segment) + "x"],
                           capture_output=True, timeout=30)
        subprocess.run(["ip", "netns", "del", self.switch], capture_output=True, timeout=30)
