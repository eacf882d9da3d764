"""The model layer: building, finding and running Hindsight's models.

ONNX Runtime's Linux builds since 1.29 send usage events to Microsoft (its 1DS
uploader resolves mobile.events.data.microsoft.com while sessions run). Hindsight
makes no network connection, so the opt-out is set here, before any module of this
package can import onnxruntime: the library reads it only when it initialises.
"""
import os as _os

_os.environ["ORT_DISABLE_TELEMETRY"] = "1"
