/// sysfs attribute sets of real chips, as their mainline drivers expose them (channel names,
/// sharing of scale/matrix attributes, scan indices and types from the drivers named; values
/// typical of a device at rest). Used to build `FakeSysfsTree` devices.
enum ChipFixtures {
    typealias Attributes = [String: String?]

    /// `scan_elements/<channel>_{en,index,type}`.
    static func scan(
        _ channel: String, index: Int, type: String, enabled: Bool = false,
        directory: String = "scan_elements"
    ) -> Attributes {
        [
            "\(directory)/\(channel)_en": enabled ? "1" : "0",
            "\(directory)/\(channel)_index": String(index),
            "\(directory)/\(channel)_type": type,
        ]
    }

    static func merge(_ parts: Attributes...) -> Attributes {
        parts.reduce(into: [:]) { $0.merge($1) { _, new in new } }
    }

    static let buffer: Attributes = [
        "buffer/enable": "0", "buffer/length": "0", "buffer/watermark": "1", "buffer/data_available": "0",
    ]

    /// Bosch BMI160 (bmi160_core.c): one device with accel and gyro; scan indices gyro 4–6,
    /// accel 7–9, timestamp 10; scale and sampling frequency shared by type; `in_mount_matrix`
    /// shared by direction.
    static let bmi160 = merge(
        [
            "name": "bmi160",
            "in_accel_x_raw": "12", "in_accel_y_raw": "-16392", "in_accel_z_raw": "40",
            "in_accel_scale": "0.000598",
            "in_accel_sampling_frequency": "100.000000",
            "in_accel_sampling_frequency_available":
                "0.781250 1.562500 3.125000 6.250000 12.500000 25.000000 50.000000 100.000000 200.000000 400.000000 800.000000 1600.000000",
            "in_anglvel_x_raw": "3", "in_anglvel_y_raw": "-2", "in_anglvel_z_raw": "1",
            "in_anglvel_scale": "0.001065",
            "in_anglvel_sampling_frequency": "100.000000",
            "in_mount_matrix": "1, 0, 0; 0, 1, 0; 0, 0, 1",
            "current_timestamp_clock": "realtime",
            "trigger/current_trigger": "",
        ],
        buffer,
        scan("in_anglvel_x", index: 4, type: "le:s16/16>>0"),
        scan("in_anglvel_y", index: 5, type: "le:s16/16>>0"),
        scan("in_anglvel_z", index: 6, type: "le:s16/16>>0"),
        scan("in_accel_x", index: 7, type: "le:s16/16>>0"),
        scan("in_accel_y", index: 8, type: "le:s16/16>>0"),
        scan("in_accel_z", index: 9, type: "le:s16/16>>0"),
        scan("in_timestamp", index: 10, type: "le:s64/64>>0")
    )

    /// ST LSM6DSx accelerometer half (st_lsm6dsx_core.c): a separate device per sensor, hardware
    /// FIFO (no trigger), `mount_matrix` shared by all, 5.11+ `buffer0/` beside the legacy names.
    static let lsm6dsxAccel = merge(
        [
            "name": "lsm6dsl_accel",
            "in_accel_x_raw": "-16", "in_accel_y_raw": "8", "in_accel_z_raw": "-16380",
            "in_accel_scale": "0.000598",
            "sampling_frequency": "104.000",
            "sampling_frequency_available": "12.500 26.000 52.000 104.000 208.000 416.000",
            "mount_matrix": "0, 1, 0; -1, 0, 0; 0, 0, 1",
            "current_timestamp_clock": "realtime",
            "hwfifo_watermark": "1",
            "buffer0/enable": "0", "buffer0/length": "0",
        ],
        buffer,
        scan("in_accel_x", index: 0, type: "le:s16/16>>0"),
        scan("in_accel_y", index: 1, type: "le:s16/16>>0"),
        scan("in_accel_z", index: 2, type: "le:s16/16>>0"),
        scan("in_timestamp", index: 3, type: "le:s64/64>>0"),
        scan("in_accel_x", index: 0, type: "le:s16/16>>0", directory: "buffer0"),
        scan("in_accel_y", index: 1, type: "le:s16/16>>0", directory: "buffer0"),
        scan("in_accel_z", index: 2, type: "le:s16/16>>0", directory: "buffer0"),
        scan("in_timestamp", index: 3, type: "le:s64/64>>0", directory: "buffer0")
    )

    /// HID sensor hub accel_3d (hid-sensor-accel-3d.c): 32-bit storage, scale/offset/frequency
    /// shared by type, trigger `accel_3d-dev0`. `storage` is `le:s16/32` (iio-sensor-proxy's
    /// test data) or `le:s32/32` (most hubs).
    static func hidAccel(storage: String) -> Attributes {
        merge(
            [
                "name": "accel_3d",
                "in_accel_x_raw": "0", "in_accel_y_raw": "-1000", "in_accel_z_raw": "0",
                "in_accel_scale": "0.009806650",
                "in_accel_offset": "0",
                "in_accel_sampling_frequency": "10.000000",
                "in_accel_hysteresis": "0.000000",
                "current_timestamp_clock": "realtime",
                "trigger/current_trigger": "accel_3d-dev0",
            ],
            buffer,
            scan("in_accel_x", index: 0, type: "\(storage)>>0"),
            scan("in_accel_y", index: 1, type: "\(storage)>>0"),
            scan("in_accel_z", index: 2, type: "\(storage)>>0"),
            scan("in_timestamp", index: 3, type: "le:s64/64>>0")
        )
    }

    /// Analog Devices ADXL345 (adxl345_core.c): 13-bit samples in 16-bit words, hardware FIFO,
    /// no timestamp channel (adxl345.rst's `iio_readdev` example reads 6-byte scans).
    static let adxl345 = merge(
        [
            "name": "adxl345",
            "in_accel_x_raw": "-2", "in_accel_y_raw": "-256", "in_accel_z_raw": "3",
            "in_accel_scale": "0.038312",
            "sampling_frequency": "100.000000",
            "in_accel_x_calibbias": "0",
        ],
        buffer,
        scan("in_accel_x", index: 0, type: "le:s13/16>>0"),
        scan("in_accel_y", index: 1, type: "le:s13/16>>0"),
        scan("in_accel_z", index: 2, type: "le:s13/16>>0")
    )

    /// Bosch BMP280 (bmp280-core.c): processed pressure (kPa) and temperature (milli-°C); the
    /// triggered buffer of recent kernels carries 32-bit pressure and temperature words
    /// (format of the buffered words per recent kernels, not checked against a kernel).
    static let bmp280 = merge(
        [
            "name": "bmp280",
            "in_pressure_input": "101.325000",
            "in_pressure_oversampling_ratio": "16",
            "in_pressure_scale": "0.000003906",
            "in_temp_input": "23450",
            "in_temp_oversampling_ratio": "2",
            "in_temp_scale": "10",
            "current_timestamp_clock": "realtime",
        ],
        buffer,
        scan("in_pressure", index: 0, type: "le:u32/32>>0"),
        scan("in_temp", index: 1, type: "le:s32/32>>0"),
        scan("in_timestamp", index: 2, type: "le:s64/64>>0")
    )

    /// ams TSL2591 (tsl2591.c): lux as `in_illuminance_input`, unit-less both/IR counts; no buffer.
    static let tsl2591: Attributes = [
        "name": "tsl2591",
        "in_illuminance_input": "123.456",
        "in_intensity_both_raw": "2345",
        "in_intensity_ir_raw": "456",
        "in_illuminance_integration_time": "0.200",
        "in_illuminance_integration_time_available": "0.100 0.200 0.300 0.400 0.500 0.600",
    ]

    /// Broadcom APDS9960 (apds9960.c): unit-less clear/red/green/blue counts with a gain as
    /// `in_intensity_scale`; its buffer carries only gesture (proximity) data.
    static let apds9960 = merge(
        [
            "name": "apds9960",
            "in_intensity_clear_raw": "1200",
            "in_intensity_red_raw": "400", "in_intensity_green_raw": "400", "in_intensity_blue_raw": "400",
            "in_intensity_scale": "4",
            "in_intensity_integration_time": "0.100",
            "in_proximity_raw": "3",
        ],
        buffer,
        scan("in_proximity_up", index: 0, type: "le:u8/8>>0"),
        scan("in_proximity_down", index: 1, type: "le:u8/8>>0"),
        scan("in_proximity_left", index: 2, type: "le:u8/8>>0"),
        scan("in_proximity_right", index: 3, type: "le:u8/8>>0")
    )

    /// ACPI ambient light sensor ACPI0008 (acpi-als.c): raw and processed illuminance, a 32-bit
    /// buffered word, timestamp, its own trigger.
    static let acpiALS = merge(
        [
            "name": "acpi-als",
            "in_illuminance_raw": "312",
            "in_illuminance_input": "312",
            "current_timestamp_clock": "realtime",
            "trigger/current_trigger": "acpi-als-dev0",
        ],
        buffer,
        scan("in_illuminance", index: 0, type: "le:s32/32>>0"),
        scan("in_timestamp", index: 1, type: "le:s64/64>>0")
    )

    /// Bosch BMA400 (bma400_core.c): 12-bit accelerometer with a buffer, a die temperature, and a
    /// step counter (`in_steps_input`, `scan_index = -1`: no scan element, polled).
    static let bma400 = merge(
        [
            "name": "bma400",
            "in_accel_x_raw": "2", "in_accel_y_raw": "-1024", "in_accel_z_raw": "-3",
            "in_accel_scale": "0.009576806",
            "in_accel_sampling_frequency": "100.000000",
            "in_temp_raw": "23",
            "in_temp_scale": "500",
            "in_temp_offset": "46",
            "in_steps_input": "1532",
            "in_steps_en": "1",
            "current_timestamp_clock": "realtime",
        ],
        buffer,
        scan("in_accel_x", index: 0, type: "le:s12/16>>0"),
        scan("in_accel_y", index: 1, type: "le:s12/16>>0"),
        scan("in_accel_z", index: 2, type: "le:s12/16>>0"),
        scan("in_temp", index: 3, type: "le:s8/8>>0"),
        scan("in_timestamp", index: 4, type: "le:s64/64>>0")
    )
}
