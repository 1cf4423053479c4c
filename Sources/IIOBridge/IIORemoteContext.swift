import CIIO
import Glibc
import SensorKitModel
import SensorSystem

/// A libiio context on a lab rig, reached over the network (`ip:host[:port]`, served by `iiod`) —
/// the only file that touches libiio (its error conventions changed between 0.x and 1.x,
/// and that must touch one file). Local devices are read from `/dev/iio:deviceN` directly
/// (`IIOScanReader`): libiio 0.24's refill blocks for a whole buffer and drops partial ones
/// (docs/iio.md §12.6). Over the network there is no such choice, so a remote buffer is refilled in a
/// loop on a reading queue of its own (`IIORemoteCapture`).
///
/// libiio 0.24 returns negative errno values from `ssize_t`/`int` calls and NULL with `errno` set
/// from constructors; both become `SystemError`s here. Every call may block on the network.
public final class IIORemoteContext: @unchecked Sendable {
    // @unchecked: the context handle is used by one caller at a time (discovery's queue, then the
    // buffer's reading queue for its own connection); `IIORemoteBuffer.cancel` is thread-safe
    // per libiio's documentation of `iio_buffer_cancel`.
    public let uri: String
    private let context: OpaquePointer

    /// `iio_create_context_from_uri` + `iio_context_set_timeout`. Blocks: TCP connect and the XML
    /// description download.
    public init(uri: String, timeoutMilliseconds: UInt32 = 5_000) throws(SystemError) {
        self.uri = uri
        guard let context = iio_create_context_from_uri(uri) else {
            throw SystemError("iio_create_context_from_uri(\(uri))", errno: errno == 0 ? EIO : errno)
        }
        let result = iio_context_set_timeout(context, timeoutMilliseconds)
        if result < 0 {
            iio_context_destroy(context)
            throw SystemError("iio_context_set_timeout(\(uri))", errno: -result)
        }
        self.context = context
    }

    deinit { iio_context_destroy(context) }

    /// Every device with its channels, scan formats and attribute texts
    /// (`iio_context_get_device`, `iio_device_get_channel`, `iio_channel_get_data_format`,
    /// `iio_channel_attr_read`, `iio_device_attr_read`). Blocks: one round trip per attribute.
    /// Triggers (`trigger0`) are not devices.
    public func devices() -> [IIORemoteDeviceModel] {
        var devices: [IIORemoteDeviceModel] = []
        for index in 0..<iio_context_get_devices_count(context) {
            guard let device = iio_context_get_device(context, index),
                let id = iio_device_get_id(device).map(String.init(cString:)),
                id.hasPrefix("iio:device")
            else { continue }
            var model = IIORemoteDeviceModel(
                id: id, name: iio_device_get_name(device).map(String.init(cString:)) ?? id, channels: [])
            for attribute in 0..<iio_device_get_attrs_count(device) {
                guard let name = iio_device_get_attr(device, attribute).map(String.init(cString:)) else { continue }
                model.attributes[name] = Self.text { iio_device_attr_read(device, name, $0, $1) }
            }
            for channelIndex in 0..<iio_device_get_channels_count(device) {
                guard let channel = iio_device_get_channel(device, channelIndex),
                    let channelID = iio_channel_get_id(channel).map(String.init(cString:))
                else { continue }
                var entry = IIORemoteDeviceModel.Channel(id: channelID, isOutput: iio_channel_is_output(channel))
                if iio_channel_is_scan_element(channel), let format = iio_channel_get_data_format(channel)?.pointee,
                    let type = try? ScanType(
                        parsing: "\(format.is_be ? "be" : "le"):\(format.is_signed ? "s" : "u")\(format.bits)/"
                            + "\(format.length)\(format.repeat > 1 ? "X\(format.repeat)" : "")>>\(format.shift)")
                {
                    entry.scan = (Int(iio_channel_get_index(channel)), type)
                }
                for attribute in 0..<iio_channel_get_attrs_count(channel) {
                    guard let name = iio_channel_get_attr(channel, attribute).map(String.init(cString:)) else { continue }
                    entry.attributes[name] = Self.text { iio_channel_attr_read(channel, name, $0, $1) }
                }
                model.channels.append(entry)
            }
            devices.append(model)
        }
        return devices
    }

    /// Writes a channel attribute (`iio_channel_attr_write`), e.g. a raised `sampling_frequency`.
    /// Blocks.
    public func writeChannelAttribute(device deviceID: String, channel channelID: String, _ name: String, _ value: String)
        throws(SystemError)
    {
        guard let device = iio_context_find_device(context, deviceID),
            let channel = iio_device_find_channel(device, channelID, false)
        else {
            throw SystemError("iio_device_find_channel(\(deviceID), \(channelID))", errno: ENOENT)
        }
        let result = iio_channel_attr_write(channel, name, value)
        if result < 0 { throw SystemError("iio_channel_attr_write(\(channelID), \(name))", errno: Int32(-result)) }
    }

    /// Enables `channels` (ids such as `accel_x`, plus `timestamp`) and disables the rest
    /// (`iio_channel_enable`/`_disable`), then `iio_device_create_buffer(samples, non-cyclic)`,
    /// which makes iiod enable the rig's kernel buffer. Blocks.
    public func openBuffer(device deviceID: String, channels: [String], samples: Int) throws(SystemError) -> IIORemoteBuffer {
        guard let device = iio_context_find_device(context, deviceID) else {
            throw SystemError("iio_context_find_device(\(deviceID))", errno: ENODEV)
        }
        for index in 0..<iio_device_get_channels_count(device) {
            guard let channel = iio_device_get_channel(device, index), !iio_channel_is_output(channel),
                iio_channel_is_scan_element(channel), let id = iio_channel_get_id(channel).map(String.init(cString:))
            else { continue }
            if channels.contains(id) { iio_channel_enable(channel) } else { iio_channel_disable(channel) }
        }
        guard let buffer = iio_device_create_buffer(device, samples, false) else {
            throw SystemError("iio_device_create_buffer(\(deviceID), \(samples))", errno: errno == 0 ? EIO : errno)
        }
        let size = iio_device_get_sample_size(device)
        return IIORemoteBuffer(buffer: buffer, context: self, deviceID: deviceID, sampleSize: size > 0 ? size : 0)
    }

    /// An attribute's text: up to 4 KiB, trimmed; nil when the read fails.
    private static func text(_ read: (UnsafeMutablePointer<CChar>, Int) -> Int) -> String? {
        var bytes = [CChar](repeating: 0, count: 4_096)
        let count = bytes.withUnsafeMutableBufferPointer { read($0.baseAddress!, $0.count) }
        guard count >= 0 else { return nil }
        return SysfsNumber.trim(String(decoding: bytes.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self))
    }
}

/// One open remote buffer. `refill` and `close` run on the reading queue that owns it; `cancel`
/// may be called from any thread to end a blocked refill.
public final class IIORemoteBuffer: @unchecked Sendable {
    // @unchecked: `buffer` is refilled and destroyed only on the owner's reading queue; libiio
    // documents `iio_buffer_cancel` as safe from another thread.
    private let buffer: OpaquePointer
    private let context: IIORemoteContext  // keeps the context alive as long as the buffer
    public let deviceID: String
    /// Bytes per scan as libiio lays them out (`iio_device_get_sample_size`).
    public let sampleSize: Int
    private var closed = false

    init(buffer: OpaquePointer, context: IIORemoteContext, deviceID: String, sampleSize: Int) {
        self.buffer = buffer
        self.context = context
        self.deviceID = deviceID
        self.sampleSize = sampleSize
    }

    deinit { if !closed { iio_buffer_destroy(buffer) } }

    /// `iio_buffer_refill`: blocks until the buffer is full (or the context's timeout, ETIMEDOUT),
    /// then hands its bytes (`iio_buffer_start` … `iio_buffer_end`) to `body`.
    public func refill(_ body: (UnsafeRawBufferPointer) -> Void) throws(SystemError) {
        precondition(!closed, "refill after close")
        let result = iio_buffer_refill(buffer)
        if result < 0 { throw SystemError("iio_buffer_refill(\(context.uri) \(deviceID))", errno: Int32(-result)) }
        guard let start = iio_buffer_start(buffer), let end = iio_buffer_end(buffer) else { return }
        body(UnsafeRawBufferPointer(start: start, count: end - start))
    }

    /// `iio_buffer_cancel`: a blocked `refill` returns (with EBADF); the buffer must then be closed.
    public func cancel() { iio_buffer_cancel(buffer) }

    /// `iio_buffer_destroy`: iiod turns the rig's buffer off.
    public func close() {
        guard !closed else { return }
        closed = true
        iio_buffer_destroy(buffer)
    }
}
