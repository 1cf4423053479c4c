"""Heart rate from a BLE wearable, read with asyncio: BPM, confidence and RR intervals (s)."""
import asyncio
import os

import sensorkit
from _common import window
from sensorkit_client import split_ragged


async def main():
    async with sensorkit.AsyncStudy(os.environ["SENSORKIT_APP"], hold=os.environ.get("SENSORKIT_HOLD", "24h")) as s:
        samples = 0
        async for batch in s.batches("heartRate", *window()):
            samples += batch["count"]
            rr = split_ragged(batch)
            for i in range(batch["count"]):
                print("sr_time=%d bpm=%g confidence=%d rr=%s" % (batch["sensor_times"][i], batch["columns"]["bpm"][i],
                                                                 batch["columns"]["confidence"][i], rr[i]))
        print("heartRate: %d samples" % samples)


asyncio.run(main())
