/// Socket activation as systemd hands it over (sd_listen_fds(3)): `LISTEN_PID` names the process
/// the descriptors are meant for, `LISTEN_FDS` counts them from fd 3, `LISTEN_FDNAMES` names them
/// (`FileDescriptorName=` in `systemd/sensorkitd.socket`). Pure: the environment and pid are
/// passed in; `InheritedSocket.adoptListener` then checks the descriptor itself.
public enum SocketActivation: Equatable, Sendable {
    /// Not socket-activated (or the variables were meant for another process): bind `--socket`.
    case none
    /// The reader socket is fd `fd`.
    case listener(fd: Int32)

    /// The first descriptor systemd passes (`SD_LISTEN_FDS_START`).
    public static let firstDescriptor: Int32 = 3
    /// The name `systemd/sensorkitd.socket` gives the reader socket.
    public static let readerName = "reader"

    public struct Refusal: Error, Equatable, Sendable, CustomStringConvertible {
        public var description: String
    }

    /// Which inherited descriptor is the reader socket. With one descriptor it is fd 3 whatever
    /// its name; with several, the one named `reader`. Malformed values are refused rather than
    /// guessed at, so a unit typo stops the start with a message instead of serving nothing.
    public static func parse(environment: [String: String], pid: Int32) throws(Refusal) -> SocketActivation {
        guard let pidText = environment["LISTEN_PID"], let countText = environment["LISTEN_FDS"] else { return .none }
        guard let listenPID = Int32(pidText), listenPID > 0 else {
            throw Refusal(description: "LISTEN_PID=\(pidText.prefix(40)) is not a process id")
        }
        // For another process (a parent that did not unset them): not ours to take.
        guard listenPID == pid else { return .none }
        guard let count = Int32(countText), count >= 0 else {
            throw Refusal(description: "LISTEN_FDS=\(countText.prefix(40)) is not a count")
        }
        guard count > 0 else { return .none }
        guard count <= 64 else {
            throw Refusal(description: "LISTEN_FDS=\(count): more descriptors than a socket unit hands over")
        }
        guard count > 1 else { return .listener(fd: firstDescriptor) }
        let names =
            environment["LISTEN_FDNAMES"].map { $0.split(separator: ":", omittingEmptySubsequences: false).map(String.init) }
            ?? []
        guard names.count == Int(count) else {
            throw Refusal(
                description: "LISTEN_FDS=\(count) but LISTEN_FDNAMES names \(names.count); cannot tell which is the reader socket"
            )
        }
        let readers = names.indices.filter { names[$0] == readerName }
        guard readers.count == 1, let index = readers.first else {
            throw Refusal(
                description:
                    "\(count) sockets passed, \(readers.count) named '\(readerName)' (FileDescriptorName=); need exactly one")
        }
        return .listener(fd: firstDescriptor + Int32(index))
    }
}
