import Foundation
import Glibc
import Testing

/// What the test machine must offer, in one place. `make test` installs all of it and checks it
/// at set-up (`scripts/install-deps.sh`, then `scripts/check-deps.sh`); a test whose tool is
/// missing anyway fails naming what is missing and the package that brings it. It never skips:
/// a skip on a machine that lacks a dependency would pass a suite that checked nothing.
public enum TestEnvironment {
    /// The interpreter the Python parts run under: Debian's, whose `python3-*` packages the
    /// README's command installs. The first `python3` on `PATH` may be another build without them.
    /// `SENSORKIT_PYTHON` points the tests at another interpreter (a venv, say).
    public static let python = ProcessInfo.processInfo.environment["SENSORKIT_PYTHON"] ?? "/usr/bin/python3"

    /// One thing a test needs: a check and the sentence that names the fix when it fails.
    public struct Need: Sendable {
        public let missing: @Sendable () -> String?

        public init(_ missing: @escaping @Sendable () -> String?) { self.missing = missing }

        /// Executables, each with the Debian package that ships it.
        public static func tools(_ tools: [(path: String, package: String)]) -> Need {
            Need {
                tools.first { !FileManager.default.isExecutableFile(atPath: $0.path) }
                    .map { "needs \($0.path) (Debian package \($0.package)); run `make test`, which installs it" }
            }
        }

        /// umockdev and its controller: the umockdev tools, `timeout` and the interpreter that
        /// runs `Tests/Fixtures/iio/testbed.py` through GObject introspection.
        public static let umockdev = tools([
            ("/usr/bin/umockdev-run", "umockdev"), ("/usr/bin/umockdev-wrapper", "umockdev"),
            ("/usr/bin/timeout", "coreutils"), (TestEnvironment.python, "python3"),
        ])

        /// Root: chown to another user, mounting a tmpfs, dpkg with maintainer scripts.
        public static func root(_ why: String) -> Need {
            Need { geteuid() == 0 ? nil : "needs root (\(why)); run `make test` as root or with sudo, as CI does" }
        }
    }

    /// Fails the calling test when `need` is not met.
    public static func require(_ need: Need) throws {
        if let missing = need.missing() { throw Unmet(description: missing) }
    }

    struct Unmet: Error, CustomStringConvertible {
        let description: String
    }
}

/// `@Test(.needs(.umockdev))` or `@Suite(.needs(.root("…")))`: the test (each test of the suite)
/// fails at once, with the reason, when the need is not met, instead of being skipped.
public struct NeedsTrait: TestTrait, SuiteTrait, TestScoping {
    let need: TestEnvironment.Need

    public var isRecursive: Bool { true }

    public func provideScope(
        for test: Test, testCase: Test.Case?,
        performing function: @Sendable () async throws -> Void
    ) async throws {
        // A suite's own scope passes through; each of its tests checks for itself and fails alone.
        if !test.isSuite { try TestEnvironment.require(need) }
        try await function()
    }
}

extension Trait where Self == NeedsTrait {
    public static func needs(_ need: TestEnvironment.Need) -> NeedsTrait { NeedsTrait(need: need) }
}
