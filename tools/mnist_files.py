"""The official MNIST files, as the tools know them: each IDX file's name and the sha256 of its
decompressed bytes. tools/fetch-mnist checks what it fetches against them and the race harness
(race_harness/draws.py) marks a pool official by them; the engine's own check of the two training
files (raw sha256, the published gzip md5) is engine/io/mnist_official.cpp."""

TRAIN_IMAGES = "train-images-idx3-ubyte"
TRAIN_LABELS = "train-labels-idx1-ubyte"
TEST_IMAGES = "t10k-images-idx3-ubyte"
TEST_LABELS = "t10k-labels-idx1-ubyte"

OFFICIAL_SHA256 = {
    TRAIN_IMAGES: "ba891046e6505d7aadcbbe25680a0738ad16aec93bde7f9b65e87a2fc25776db",
    TRAIN_LABELS: "65a50cbbf4e906d70832878ad85ccda5333a97f0f4c3dd2ef09a8a9eef7101c5",
    TEST_IMAGES: "0fa7898d509279e482958e8ce81c8e77db3f2f8254e26661ceb7762c4d494ce7",
    TEST_LABELS: "ff7bcfd416de33731a308c3f266cc351222c34898ecbeaf847f06e48f7ec33f2",
}
