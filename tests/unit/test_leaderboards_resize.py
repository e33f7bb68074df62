"""Qwen's recorded image ``resize`` is a record for rescore, not a setting that splits rows."""

from leaderboards.settings import model_settings


def test_resize_record_does_not_split_results_of_the_same_settings():
    before = {"family": "qwen2_5_vl", "pretrained": "Qwen/Qwen2.5-VL-7B-Instruct",
              "dtype": "bfloat16", "box_convention": "pixels_resized",
              "image_min_pixels": 3136, "image_max_pixels": 12845056}  # fmt: skip
    resize = {"rule": "transformers...smart_resize", "factor": 28, "min_pixels": 3136,
              "max_pixels": 12845056}  # fmt: skip
    after = {**before, "resize": resize}
    assert model_settings(after) == model_settings(before)
    assert model_settings(before)["image_max_pixels"] == 12845056  # budgets still compared
    assert model_settings({**before, "image_max_pixels": 1003520}) != model_settings(before)


def test_video_resize_record_does_not_split_results_of_the_same_settings():
    before = {"family": "qwen2_5_vl", "pretrained": "Qwen/Qwen2.5-VL-7B-Instruct",
              "box_convention": "pixels_resized", "video_min_pixels": 3136,
              "video_max_pixels": 12845056}  # fmt: skip
    video_resize = {"rule": "transformers...Qwen2VLVideoProcessor.resize", "factor": 28,
                    "temporal_factor": 2, "min_pixels": 3136, "max_pixels": 12845056,
                    "cap_pixels_per_frame": False, "max_video_tokens": 128000}  # fmt: skip
    assert model_settings({**before, "video_resize": video_resize}) == model_settings(before)
    assert model_settings({**before, "video_max_pixels": 602112}) != model_settings(before)


def test_the_per_frame_video_cap_splits_rows():
    """cap_pixels_per_frame changes the frames the model sees and is recorded only here."""
    base = {"family": "qwen2_5_vl", "pretrained": "Qwen/Qwen2.5-VL-7B-Instruct"}
    video = {"rule": "r", "factor": 28, "temporal_factor": 2, "min_pixels": 3136,
             "max_pixels": 12845056, "cap_pixels_per_frame": False,
             "max_video_tokens": 128000}  # fmt: skip
    off = model_settings({**base, "video_resize": video})
    on = model_settings({**base, "video_resize": {**video, "cap_pixels_per_frame": True}})
    fewer = {**video, "cap_pixels_per_frame": True, "max_video_tokens": 64000}
    assert on != off and on != model_settings({**base, "video_resize": fewer})
    assert on["video_resize.cap_pixels_per_frame"] is True and "video_resize.factor" not in on
