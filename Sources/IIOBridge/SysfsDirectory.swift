import Glibc
import SensorKitModel
import SensorSystem

/// One directory of sysfs attributes (an IIO device, its `scan_elements/`, a trigger), read and
/// written through plain `open`/`read`/`write` and listed through `opendir`/`readdir`.
///
/// Those are the calls umockdev's preload intercepts; `scandir`, `glob`, `FileManager.enumerator`
/// and URL-based listing bypass it (docs/iio.md §12.8), so none are used. The root is injectable:
/// tests point it at a temporary directory, production at `/sys/bus/iio/devices/iio:deviceN`.
///
/// Every call may block: a sysfs read of a slow sensor can take seconds (docs/iio.md §12.3). Call them
/// only off the sampling queue.
public struct SysfsDirectory: Hashable, Sendable {
    public let path: String

    public init(path: String) {
        self.path = path.count > 1 && path.hasSuffix("/") ? String(path.dropLast()) : path
    }

    /// The directory's last path component, e.g. `iio:device0`.
    public var name: String { path.split(separator: "/").last.map(String.init) ?? path }

    /// A subdirectory (`scan_elements`, `buffer0`, `trigger`).
    public func subdirectory(_ name: String) -> SysfsDirectory { SysfsDirectory(path: path + "/" + name) }

    /// Entry names (`opendir`/`readdir`), without `.` and `..`, sorted for determinism.
    /// Throws when the directory cannot be opened (ENOENT: it does not exist).
    public func entries() throws(SystemError) -> [String] {
        try SystemCalls.directoryEntries(path).sorted()
    }

    /// Whether `name` exists (a file or a directory): `access(F_OK)`.
    public func contains(_ name: String) -> Bool { access(path + "/" + name, F_OK) == 0 }

    /// The attribute's text with surrounding white space removed (sysfs ends values with `\n`);
    /// nil when the attribute does not exist (ENOENT). Other failures (EIO, ENODEV, EBUSY) throw.
    /// `open`+`read`; may block.
    public func read(_ name: String) throws(SystemError) -> String? {
        do throws(SystemError) {
            return SysfsNumber.trim(try SystemFiles.read(path + "/" + name))
        } catch {
            if error.errno == ENOENT { return nil }
            throw error
        }
    }

    /// Writes an attribute the way sysfs expects: `open(O_WRONLY|O_TRUNC)` and one `write` of the
    /// whole value. `O_TRUNC` matters under umockdev, whose attributes are plain files
    /// (docs/iio.md §12.8). Throws EINVAL/EBUSY from the driver as `SystemError`. May block.
    public func write(_ name: String, _ value: String) throws(SystemError) {
        let file = path + "/" + name
        let fd = try SystemCalls.open(file, O_WRONLY | O_TRUNC | O_CLOEXEC)
        defer { SystemCalls.close(fd) }
        let bytes = Array(value.utf8)
        let written = try bytes.withUnsafeBytes { raw in Result { () throws(SystemError) in try SystemCalls.write(fd, raw, file) }
        }.get()
        if written != bytes.count { throw SystemError("write(\(file)) wrote \(written) of \(bytes.count) bytes", errno: EIO) }
    }
}
