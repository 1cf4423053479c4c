import Foundation
import Glibc
import SensorKit
import SensorSimulation
import SensorSystem
import Synchronization
import Testing

@testable import SensorDaemon

/// sensorkitd under a service manager (systemd/sensorkitd.service, .socket): socket activation,
/// the notify protocol and the watchdog, with the real binary and a datagram socket standing where
/// systemd's `$NOTIFY_SOCKET` would be (docs/reliability.md, "The service manager").
@Suite(.serialized) struct ServiceManagerTests {
    // MARK: LISTEN_FDS, pure

    @Test func socketActivationTakesFdThreeOnlyWhenMeantForThisProcess() throws {
        #expect(try SocketActivation.parse(environment: [:], pid: 42) == .none)
        #expect(try SocketActivation.parse(environment: ["LISTEN_PID": "42", "LISTEN_FDS": "1"], pid: 42) == .listener(fd: 3))
        // A parent's variables leaked to a child are not the child's sockets.
        #expect(try SocketActivation.parse(environment: ["LISTEN_PID": "41", "LISTEN_FDS": "1"], pid: 42) == .none)
        #expect(try SocketActivation.parse(environment: ["LISTEN_PID": "42", "LISTEN_FDS": "0"], pid: 42) == .none)
        #expect(
            try SocketActivation.parse(
                environment: ["LISTEN_PID": "42", "LISTEN_FDS": "1", "LISTEN_FDNAMES": "anything"], pid: 42)
                == .listener(fd: 3))
        #expect(
            try SocketActivation.parse(
                environment: ["LISTEN_PID": "42", "LISTEN_FDS": "3", "LISTEN_FDNAMES": "a:reader:b"], pid: 42)
                == .listener(fd: 4))
    }

    @Test func malformedActivationVariablesAreRefusedNotGuessed() {
        for environment in [
            ["LISTEN_PID": "x", "LISTEN_FDS": "1"], ["LISTEN_PID": "42", "LISTEN_FDS": "-1"],
            ["LISTEN_PID": "42", "LISTEN_FDS": "99999999999"], ["LISTEN_PID": "42", "LISTEN_FDS": "2"],
            ["LISTEN_PID": "42", "LISTEN_FDS": "2", "LISTEN_FDNAMES": "a:b"],
            ["LISTEN_PID": "42", "LISTEN_FDS": "2", "LISTEN_FDNAMES": "reader:reader"],
        ] {
            #expect(throws: SocketActivation.Refusal.self, "\(environment)") {
                try SocketActivation.parse(environment: environment, pid: 42)
            }
        }
    }

    @Test func anInheritedDescriptorThatIsNotAListeningUnixStreamSocketIsRefused() throws {
        let (a, b) = try SystemCalls.streamSocketPair()
        defer { SystemCalls.close(a); SystemCalls.close(b) }
        #expect(throws: SystemError.self) { try InheritedSocket.adoptListener(a) }
        let datagram = try SystemCalls.datagramSocket()
        defer { SystemCalls.close(datagram) }
        #expect(throws: SystemError.self) { try InheritedSocket.adoptListener(datagram) }
    }

    // MARK: The watchdog

    @Test(.timeLimit(.minutes(3))) func theWatchdogPingsOnlyWhileItsProbedQueuesAnswer() throws {
        let pings = Mutex(0)
        let lines = Mutex<[String]>([])
        let work = DispatchQueue(label: "probed")
        let time = ManualScheduler()
        let dog = ServiceWatchdog(
            interval: 0.05, scheduler: time, probes: [("pipeline", { work.async(execute: $0) })],
            ping: { pings.withLock { $0 += 1 } }, log: Journal { line in lines.withLock { $0.append(line) } })
        defer { dog.stop() }
        /// One watchdog period passes; its probe, if the queue is free, has answered when this returns.
        func period() throws {
            try time.advance(by: .milliseconds(50))
            work.sync {}
        }
        try time.advance(by: .zero)  // the first tick, at once
        work.sync {}
        for _ in 0..<7 { try period() }
        #expect(pings.withLock { $0 } == 8, "a free queue: a ping every 50 ms")
        // The queue wedges (a stuck write, a deadlock): pings stop, one line says which queue.
        let release = DispatchSemaphore(value: 0)
        work.async { release.wait() }
        for _ in 0..<8 { try time.advance(by: .milliseconds(50)) }
        #expect(pings.withLock { $0 } == 8, "no ping while the pipeline does not answer")
        #expect(lines.withLock { $0 } == ["<3>watchdog: pipeline did not answer within 50 ms; withholding WATCHDOG=1"])
        release.signal()
        work.sync {}  // the probe sent before the wedge answers: the ping it held goes out
        try period()
        #expect(pings.withLock { $0 } == 10, "pings resume once it answers")
    }

    // MARK: The real daemon, as systemd starts it

    /// A listening socket bound by the test (as sensorkitd.socket is by systemd) is handed to the
    /// real daemon as fd 3 with LISTEN_PID/LISTEN_FDS/LISTEN_FDNAMES; a datagram socket receives
    /// what the daemon tells the service manager. The daemon must serve the inherited socket (not
    /// bind --socket), say READY=1 with a STATUS=, ping WATCHDOG=1 every half WATCHDOG_USEC, and
    /// on SIGTERM leave the socket file, which belongs to the socket unit.
    @Test(.timeLimit(.minutes(3))) func theRealDaemonServesAnInheritedSocketAndTalksToTheServiceManager() throws {
        var template = Array("/tmp/sksd-XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else { throw SystemError("mkdtemp", errno: errno) }
        let folder = String(cString: made)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        chmod(folder, 0o755)
        try "profile = lab\n".write(toFile: folder + "/sensorkitd.conf", atomically: true, encoding: .utf8)
        let socketPath = folder + "/activated.sock"
        let listener = try UnixSocket.listen(path: socketPath)
        defer { SystemCalls.close(listener) }
        let notify = try NotifyListener(path: folder + "/notify")

        // sh puts the listener (its stdin) on fd 3 and sets LISTEN_PID to its own pid, which exec keeps.
        let script =
            "exec 3<&0 0</dev/null; export LISTEN_PID=$$ LISTEN_FDS=1 LISTEN_FDNAMES=reader "
            + "NOTIFY_SOCKET=\(folder)/notify WATCHDOG_USEC=400000; exec \"$@\""
        let log = open(folder + "/daemon.log", O_WRONLY | O_CREAT | O_CLOEXEC, 0o600)
        defer { Glibc.close(log) }
        let daemon = try ChildProcess(
            [
                "/usr/bin/timeout", "--kill-after=3", "40", "/bin/sh", "-c", script, "sh",
                DaemonHarness.productsFolder + "/sensorkitd", "--socket", folder + "/unused.sock",
                "--config", folder + "/sensorkitd.conf", "--apps-dir", folder + "/apps.d",
                "--state-dir", folder + "/state",
            ],
            stdin: listener, stdout: log, stderr: log)
        defer {
            kill(-daemon.pid, SIGKILL)
            daemon.wait()
        }
        func daemonLog() -> String { (try? String(contentsOfFile: folder + "/daemon.log", encoding: .utf8)) ?? "" }

        let ready = notify.receive(until: { $0.contains { $0.hasPrefix("READY=1") } }, seconds: 20)
        let readyMessage = try #require(ready.first { $0.hasPrefix("READY=1") }, "no READY=1; got \(ready)\n\(daemonLog())")
        #expect(readyMessage.split(separator: "\n").contains { $0.hasPrefix("STATUS=") }, "\(readyMessage)")
        // WATCHDOG_USEC=400 ms: a ping every 200 ms, so at least four in the next second.
        let start = Date()
        let after = notify.receive(until: { $0.filter { $0 == "WATCHDOG=1" }.count >= 4 }, seconds: 1.0)
        #expect(
            after.filter { $0 == "WATCHDOG=1" }.count >= 4,
            "\(after) within \(Date().timeIntervalSince(start)) s\n\(daemonLog())")

        let admin = try ReaderConnection(socketPath: socketPath, app: nil)
        let status = admin.call(.daemonStatus)
        #expect(status.error == nil, "\(status)")
        admin.close()
        #expect(
            !FileManager.default.fileExists(atPath: folder + "/unused.sock"),
            "--socket must not be bound when a socket is handed over")
        #expect(
            FileManager.default.fileExists(atPath: folder + "/" + TimelineFile.fileName),
            "the timeline is published beside the served socket")
        #expect(daemonLog().contains("socket activation: serving fd 3, listening on \(socketPath)"), "\(daemonLog())")

        kill(daemon.pid, SIGTERM)
        #expect(DaemonHarness.eventually(15) { !daemon.isRunning }, "\(daemonLog())")
        #expect(daemon.exitStatus == 0, "\(daemonLog())")
        #expect(notify.receive(until: { $0.contains("STOPPING=1") }, seconds: 2).contains("STOPPING=1"))
        var info = stat()
        #expect(lstat(socketPath, &info) == 0 && info.st_mode & S_IFMT == S_IFSOCK, "the socket unit's file stays")
    }

    /// A service manager may send SIGTERM the moment it reads `READY=1`: the daemon stops cleanly
    /// every time (the signals are taken over before it starts; before, one taken between
    /// `READY=1` and the takeover was lost and the stop hung).
    @Test(.timeLimit(.minutes(3))) func aStopRightAfterReadyIsNeverLost() throws {
        var template = Array("/tmp/sksr-XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else { throw SystemError("mkdtemp", errno: errno) }
        let folder = String(cString: made)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        try "profile = lab\n[iio]\nenabled = no\n".write(toFile: folder + "/sensorkitd.conf", atomically: true, encoding: .utf8)
        let log = open(folder + "/daemon.log", O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o600)
        let nothing = open("/dev/null", O_RDONLY | O_CLOEXEC)
        defer {
            Glibc.close(log)
            Glibc.close(nothing)
        }
        func daemonLog() -> String { (try? String(contentsOfFile: folder + "/daemon.log", encoding: .utf8)) ?? "" }
        for round in 0..<8 {
            let notify = try NotifyListener(path: folder + "/notify-\(round)")
            // exec: the shell's pid is the daemon's, which the test signals directly.
            let daemon = try ChildProcess(
                [
                    "/bin/sh", "-c", "export NOTIFY_SOCKET=\(folder)/notify-\(round); exec \"$@\"", "sh",
                    DaemonHarness.productsFolder + "/sensorkitd", "--socket", folder + "/s.sock",
                    "--config", folder + "/sensorkitd.conf", "--apps-dir", folder + "/apps.d",
                    "--state-dir", folder + "/state",
                ],
                stdin: nothing, stdout: log, stderr: log)
            defer {
                if daemon.isRunning { kill(daemon.pid, SIGKILL) }
                daemon.wait()
            }
            let ready = notify.receive(until: { $0.contains { $0.hasPrefix("READY=1") } }, seconds: 20)
            try #require(ready.contains { $0.hasPrefix("READY=1") }, "round \(round): no READY=1\n\(daemonLog())")
            kill(daemon.pid, SIGTERM)
            #expect(
                DaemonHarness.eventually(10) { !daemon.isRunning },
                "round \(round): SIGTERM right after READY=1 was lost\n\(daemonLog())")
            #expect(daemon.exitStatus == 0, "round \(round)\n\(daemonLog())")
        }
    }
}
